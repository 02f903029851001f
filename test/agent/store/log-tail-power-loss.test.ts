/**
 * A power loss after lines were written over an open log's spaces (log-tail.ts) but before they
 * were synced: the disk may hold any of their pages, in any order. The page with a line's first
 * bytes (its "\n") may be lost while a later page of it reached the disk; the last synced line
 * then reads as its JSON, the old spaces and the rest of the unsynced line, one line that does
 * not parse. The synced line must load.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SessionStore } from "../../../src/agent/store/index.js";
import { header, userMessage } from "./support.js";

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-tail-power-"));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));


it("a synced last line followed on disk by the old spaces and the rest of an unsynced line loads, and the log ends in it again", () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("p", header);
  for (let seq = 1; seq <= 3; seq++) log.append(userMessage(seq));
  log.sync();
  const file = store.pathOf("p");
  const synced = fs.readFileSync(file, "utf8");
  log.append(userMessage(4, "y".repeat(9000)));
  const written = fs.readFileSync(file, "utf8");
  log.close();
  // The disk after the power loss: the first 4096 bytes of the unsynced line as they were (spaces), the rest as written.
  const jsonEnd = synced.trimEnd().length;
  const disk = synced.slice(0, jsonEnd + 4096) + written.slice(jsonEnd + 4096);
  expect(disk.length).toBe(written.length);
  fs.writeFileSync(file, disk);
  // session/read before any load reads the synced line too.
  expect(store.read("p", undefined, 100)!.events.map((e) => e.seq)).toEqual([1, 2, 3]);
  const loaded = store.open("p", header);
  expect(loaded.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
  expect(fs.readFileSync(file, "utf8")).toBe(`${synced.slice(0, jsonEnd)}\n`);
  loaded.close();
});

it("a synced last line whose final newline an unsynced longer line overwrote, the line's first page lost and the file's growth too, loads", () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("g", header);
  for (let seq = 1; seq <= 3; seq++) log.append(userMessage(seq));
  log.sync();
  const file = store.pathOf("g");
  const synced = fs.readFileSync(file, "utf8");
  const size = synced.length;
  // Longer than the spaces left: it runs over the final "\n" and the file grows.
  log.append(userMessage(4, "y".repeat(size)));
  const written = fs.readFileSync(file, "utf8");
  log.close();
  expect(written.length).toBeGreaterThan(size);
  // The disk: the synced size, its last 100 bytes (the final "\n" among them) from the new line, the rest as synced.
  const disk = synced.slice(0, size - 100) + written.slice(size - 100, size);
  expect(disk.endsWith("\n")).toBe(false);
  fs.writeFileSync(file, disk);
  const jsonEnd = synced.trimEnd().length;
  // session/read and session/fork, before any load, keep the synced line as loading does.
  expect(store.read("g", undefined, 100)!.events.map((e) => e.seq)).toEqual([1, 2, 3]);
  expect(store.read("g", 2, 100)!.events.map((e) => e.seq)).toEqual([3]);
  expect(store.read("g", 3, 100)!.events).toEqual([]);
  expect(store.read("g", undefined, 2)).toMatchObject({ nextSeq: 2 });
  expect(store.fork("g", "g2", undefined)).toBeUndefined();
  expect(fs.readFileSync(store.pathOf("g2"), "utf8").endsWith(`${synced.slice(0, jsonEnd).split("\n").at(-1)}\n`)).toBe(true);
  const fork = store.open("g2", header);
  expect(fork.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
  fork.close();
  const loaded = store.open("g", header);
  expect(loaded.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
  expect(fs.readFileSync(file, "utf8")).toBe(`${synced.slice(0, jsonEnd)}\n`);
  loaded.close();
});

it("a line that is JSON, spaces and more, followed by another line, is still corruption, not a line to cut", () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("q", header);
  log.append(userMessage(1));
  log.close();
  const file = store.pathOf("q");
  fs.appendFileSync(file, `${JSON.stringify(userMessage(2))}   {"x":1}\n${JSON.stringify(userMessage(3))}\n`);
  expect(() => store.open("q", header)).toThrow(/corrupt at line 3/);
});

it("a last line that is JSON but no event, then spaces and more, is dropped as a torn line (as before), not refused", () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("r", header);
  log.append(userMessage(1));
  log.close();
  const file = store.pathOf("r");
  const before = fs.readFileSync(file, "utf8");
  fs.appendFileSync(file, `{"x":1}   {"y"\n`);
  expect(store.read("r", undefined, 10)!.events.map((e) => e.seq)).toEqual([1]);
  const loaded = store.open("r", header);
  expect(loaded.loadedEvents.map((e) => e.seq)).toEqual([1]);
  expect(fs.readFileSync(file, "utf8")).toBe(before);
  loaded.close();
  // The same without its "\n".
  fs.appendFileSync(file, `{"x":1}   {"y"`);
  const again = store.open("r", header);
  expect(again.loadedEvents.map((e) => e.seq)).toEqual([1]);
  expect(fs.readFileSync(file, "utf8")).toBe(before);
  again.close();
});

// session/list scans logs itself (summary.ts `scanLog`): the event loading keeps of a power
// loss's torn end must count there too (a title, a turn, a time), not only after a load.
it.each([
  ["the last line's JSON and spaces without their \"\\n\"", (synced: string, written: string) => synced.slice(0, synced.length - 100) + written.slice(synced.length - 100, synced.length)],
  ["the last line's JSON, spaces and the rest of a line written over them", (synced: string, written: string) => synced.slice(0, synced.trimEnd().length + 4096) + written.slice(synced.trimEnd().length + 4096)],
])("session/list after a power loss lists what loading keeps: %s", (_, disk) => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("t", header);
  log.append(userMessage(1, "the title of it"));
  log.sync();
  const file = store.pathOf("t");
  const synced = fs.readFileSync(file, "utf8");
  log.append(userMessage(2, "y".repeat(Math.max(9000, synced.length))));
  const written = fs.readFileSync(file, "utf8");
  log.close();
  fs.writeFileSync(file, disk(synced, written));
  const listed = store.list().sessions;
  expect(listed).toMatchObject([{ sessionId: "t", title: "the title of it" }]);
  store.open("t", header).close();
  expect(store.list().sessions).toEqual(listed);
});
