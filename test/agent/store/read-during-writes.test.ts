/**
 * `session/read` takes no lock (docs/guarantees.md, two processes): another process may write
 * the log under it, or cut the torn line a killed bridge left and write in its place. What the
 * read then meets — a line read partly before and partly after such a write, a torn last line
 * past the size the log had when the read began — is never answered as corruption; the page ends
 * before it. A line that does not parse with whole lines after it still is corruption, as on load.
 *
 * The other process's writes run exactly between two reads of the reader: `readSync` is wrapped
 * to run them once, right before the reader reads at the size the log had when it began (its
 * first read of the lines ends there).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { SessionEvent } from "../../../src/protocol/index.js";

const between = vi.hoisted(() => ({ at: -1, run: undefined as undefined | (() => void) }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const readSync = (...args: unknown[]) => {
    if (between.run && args[4] === between.at) {
      const run = between.run;
      between.run = undefined;
      run();
    }
    return (real.readSync as (...a: unknown[]) => number)(...args);
  };
  return { ...real, default: { ...real, readSync }, readSync };
});

const { SessionStore } = await import("../../../src/agent/store/index.js");

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-read-writes-"));
});
afterEach(() => {
  between.run = undefined;
  fs.rmSync(root, { recursive: true, force: true });
});

const WORKSPACE = "/work/space";
const header = (id: string) => JSON.stringify({ type: "session-header", version: 1, sessionId: id, workspace: WORKSPACE, createdAt: 1, provider: "scripted", model: "demo" });
const message = (seq: number, text = "x"): SessionEvent => ({ type: "user/message", seq, time: seq, data: { id: `m${seq}`, content: [{ type: "text", text }] } }) as SessionEvent;
const started = (seq: number, turn: number): SessionEvent => ({ type: "turn/start", seq, time: seq, data: { turn } }) as SessionEvent;
const lineOf = (event: SessionEvent) => JSON.stringify(event);
/** A session of three events, written as a log no bridge has open; its file. */
function logOf(store: InstanceType<typeof SessionStore>, id: string, after = ""): string {
  const file = store.pathOf(id);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${header(id)}\n${[message(1), started(2, 1), message(3)].map(lineOf).join("\n")}\n${after}`);
  return file;
}
const seqs = (page: { events: SessionEvent[] } | undefined) => page?.events.map((e) => e.seq);

it("a torn last line another bridge cuts and writes over between two reads is no corruption: the page ends before it", () => {
  const reader = new SessionStore(root, WORKSPACE);
  // A bridge was killed writing a line that ran past its spaces: no "\n" after it.
  const torn = `{"type":"assistant/message","seq":4,"time":4,"data":{"content":[{"type":"text","text":"${"y".repeat(4000)}`;
  const file = logOf(reader, "s", torn);
  between.at = fs.statSync(file).size;
  let writer: ReturnType<InstanceType<typeof SessionStore>["open"]> | undefined;
  between.run = () => {
    // The next bridge cuts the torn line and writes its prompt there; its spaces run past the old end.
    writer = new SessionStore(root, WORKSPACE).open("s", { provider: "scripted", model: "demo" });
    writer.append(message(4, "again"));
  };
  expect(seqs(reader.read("s", undefined, 1000))).toEqual([1, 2, 3]);
  expect(between.run).toBeUndefined();
  expect(seqs(reader.read("s", undefined, 1000))).toEqual([1, 2, 3, 4]);
  writer!.close();
});

it("a line torn past the size the log had when the read began is a torn last line, not corruption", () => {
  const reader = new SessionStore(root, WORKSPACE);
  const file = logOf(reader, "s");
  between.at = fs.statSync(file).size;
  let writer: ReturnType<InstanceType<typeof SessionStore>["open"]> | undefined;
  between.run = () => {
    // Another bridge writes a long line (the log grows), then is killed writing the next over its spaces.
    writer = new SessionStore(root, WORKSPACE).open("s", { provider: "scripted", model: "demo" });
    const long = message(4, "z".repeat(20_000));
    writer.append(long);
    const text = fs.readFileSync(file, "latin1");
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, '\n{"type":"turn/start","se', text.indexOf(lineOf(long)) + lineOf(long).length);
    fs.closeSync(fd);
  };
  expect(seqs(reader.read("s", undefined, 1000))).toEqual([1, 2, 3, 4]);
  expect(between.run).toBeUndefined();
  writer!.close();
});

it("a line that does not parse with whole lines after it is corruption, as on load; with only a torn piece after it, a torn write", () => {
  const store = new SessionStore(root, WORKSPACE);
  const file = logOf(store, "bad", `{oops\n${lineOf(started(5, 2))}\n`);
  const at = fs.readFileSync(file, "latin1").indexOf("{oops");
  expect(() => store.read("bad", undefined, 1000)).toThrow(`is corrupt at byte ${at}`);
  // The JSON of a line glued to more after spaces, with a line after it: corrupt too.
  const glued = logOf(store, "glued", `${lineOf(message(4))}   more\n${lineOf(started(5, 2))}\n`);
  expect(() => store.read("glued", undefined, 1000)).toThrow(`is corrupt at byte ${fs.readFileSync(glued, "latin1").indexOf(lineOf(message(4)))}`);
  // Loading cuts both the last whole line and the piece after it, and so the read ends before them.
  logOf(store, "torn", `{oops\n{"type":"turn/st`);
  expect(seqs(store.read("torn", undefined, 1000))).toEqual([1, 2, 3]);
  const loaded = store.open("torn", { provider: "scripted", model: "demo" });
  expect(loaded.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
  loaded.close();
});
