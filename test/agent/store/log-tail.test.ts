/**
 * The spaces a session log keeps after its last line while it is open (log-tail.ts): lines are
 * written over them, so a turn's sync changes no size; the file is valid JSONL at every step;
 * a failed line is cut back; another writer's line is seen; the spaces go on close and on load,
 * are never copied into a fork, and never let a listing's meta go stale.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../../src/protocol/index.js";
import { SessionStore } from "../../../src/agent/store/index.js";
import { header, userMessage } from "./support.js";
import { eachLine } from "../../../src/agent/store/log-lines.js";
import { LogTail, padFor } from "../../../src/agent/store/log-tail.js";
import { metaPathOf } from "../../../src/agent/store/log-format.js";

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-tail-"));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Every line of `file` parsed as JSON, as any JSONL reader would (trailing spaces are JSON whitespace). */
function parsedLines(file: string): unknown[] {
  const text = fs.readFileSync(file, "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line) => JSON.parse(line) as unknown);
}

/** A log file holding `first` as its only line, and a tail over it. */
function tailOf(first: string): { file: string; fd: number; tail: LogTail } {
  const file = path.join(tmp, "log.jsonl");
  fs.writeFileSync(file, `${first}\n`);
  const fd = fs.openSync(file, "r+");
  return { file, fd, tail: new LogTail(fd, fs.fstatSync(fd).size) };
}


describe("LogTail", () => {
  it("the first line grows the file by its spaces; the next lines are written over them, the size unchanged, and every line parses at every step", () => {
    const { file, fd, tail } = tailOf('{"type":"session-header"}');
    try {
      tail.append(JSON.stringify(userMessage(1)));
      const size = fs.fstatSync(fd).size;
      const line = JSON.stringify(userMessage(1)).length;
      expect(size).toBe('{"type":"session-header"}'.length + 1 + line + padFor(size) + 1);
      expect(fs.readFileSync(file, "utf8")).toMatch(/\} +\n$/);
      for (let seq = 2; seq <= 40; seq++) {
        tail.append(JSON.stringify(userMessage(seq)));
        expect(fs.fstatSync(fd).size).toBe(size);
        expect(parsedLines(file)).toHaveLength(seq + 1);
      }
      expect(tail.size).toBe(size);
      // The line reader visits each line without the spaces, and its offsets reach the file's end.
      const seen: string[] = [];
      expect(eachLine(fd, 0, (bytes) => (seen.push(bytes.toString()), true))).toBe(size);
      expect(seen.at(-1)).toBe(JSON.stringify(userMessage(40)));
    } finally {
      fs.closeSync(fd);
    }
  });

  it("a line longer than the spaces left runs past them and is followed by new spaces; a line of pieces is written whole, its own newline not doubled", () => {
    const { file, fd, tail } = tailOf("{}");
    try {
      tail.append("{}");
      const long = JSON.stringify({ text: "y".repeat(100_000) });
      tail.append(long);
      expect(fs.fstatSync(fd).size).toBe(tail.size);
      expect(tail.size - 1 - tail.end).toBe(padFor(tail.end));
      const pieces = [Buffer.from('{"a":"'), Buffer.from("z".repeat(70_000)), Buffer.from('"}\n')];
      tail.append(pieces);
      expect(parsedLines(file)).toEqual([{}, {}, JSON.parse(long), { a: "z".repeat(70_000) }]);
    } finally {
      fs.closeSync(fd);
    }
  });

  it("a line that fails part-way is cut back: the log ends in the last whole line's newline, and the next line follows it", () => {
    const { file, fd, tail } = tailOf("{}");
    try {
      tail.append('{"n":1}');
      function* failing(): Generator<Buffer> {
        yield Buffer.from('{"n":');
        yield Buffer.from("2");
        throw new Error("encoding failed");
      }
      expect(() => tail.append(failing())).toThrow("encoding failed");
      expect(fs.readFileSync(file, "utf8")).toBe('{}\n{"n":1}\n');
      tail.append('{"n":3}');
      expect(parsedLines(file)).toEqual([{}, { n: 1 }, { n: 3 }]);
    } finally {
      fs.closeSync(fd);
    }
  });

  it("untouched: false once another writer's line starts where this tail's next would; trim leaves the last line's newline and no spaces", () => {
    const { file, fd, tail } = tailOf("{}");
    const other = fs.openSync(file, "r+");
    try {
      expect(tail.untouched()).toBe(true);
      tail.append('{"n":1}');
      expect(tail.untouched()).toBe(true);
      // A second writer over the same spaces (another process that loaded the padded log).
      const theirs = new LogTail(other, fs.fstatSync(other).size);
      theirs.end = tail.end;
      theirs.append('{"n":2}');
      expect(fs.fstatSync(fd).size).toBe(tail.size);
      expect(tail.untouched()).toBe(false);
      theirs.trim();
      expect(fs.readFileSync(file, "utf8")).toBe('{}\n{"n":1}\n{"n":2}\n');
    } finally {
      fs.closeSync(other);
      fs.closeSync(fd);
    }
  });
});

describe("a session log with spaces after its last line", () => {
  
  it("close trims them and writes a meta of the trimmed size; a later load finds every event", () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    for (let seq = 1; seq <= 5; seq++) log.append(userMessage(seq));
    log.sync();
    const file = store.pathOf("s");
    expect(fs.readFileSync(file, "utf8")).toMatch(/\} +\n$/);
    log.close();
    const text = fs.readFileSync(file, "utf8");
    expect(text).toMatch(/\}\n$/);
    expect((JSON.parse(fs.readFileSync(metaPathOf(file), "utf8")) as { logSize: number }).logSize).toBe(Buffer.byteLength(text));
    const again = store.open("s", header);
    expect(again.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    again.close();
  });

  it("a log left padded (its bridge killed) loads whole and is trimmed by the load; a torn line over the spaces is dropped", () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("k", header);
    for (let seq = 1; seq <= 3; seq++) log.append(userMessage(seq));
    log.sync();
    const file = store.pathOf("k");
    const padded = fs.readFileSync(file);
    log.close();
    // Killed with the log open: the spaces stay.
    fs.writeFileSync(file, padded);
    const loaded = store.open("k", header);
    expect(loaded.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(fs.readFileSync(file, "utf8")).toMatch(/\}\n$/);
    loaded.close();
    // Killed in the middle of a line written over the spaces: the line is cut, the spaces follow.
    const text = padded.toString("utf8");
    const jsonEnd = text.trimEnd().length;
    const torn = `${text.slice(0, jsonEnd)}\n{"type":"user/message","seq":4,"ti${text.slice(jsonEnd + 35)}`;
    expect(torn.length).toBe(text.length);
    fs.writeFileSync(file, torn);
    const cut = store.open("k", header);
    expect(cut.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(fs.readFileSync(file, "utf8")).toBe(`${text.slice(0, jsonEnd)}\n`);
    cut.close();
  });

  it("a listing in another process sees each line written over the spaces: no meta is written from a padded log", () => {
    const writer = new SessionStore(tmp, "/work/space");
    const reader = new SessionStore(tmp, "/work/space"); // another process: the log is not open in it
    const log = writer.open("l", header);
    log.append({ type: "turn/start", seq: 1, time: 1, data: { turn: 1 } } as SessionEvent);
    log.append(userMessage(2, "first title"));
    log.sync();
    log.unlock();
    const first = reader.list().sessions.find((s) => s.sessionId === "l")!;
    expect(first.turns).toBe(1);
    expect(fs.existsSync(metaPathOf(writer.pathOf("l")))).toBe(false);
    const size = fs.statSync(writer.pathOf("l")).size;
    log.lock();
    log.append({ type: "turn/start", seq: 3, time: 2, data: { turn: 2 } } as SessionEvent);
    log.sync();
    log.unlock();
    expect(fs.statSync(writer.pathOf("l")).size).toBe(size);
    expect(reader.list().sessions.find((s) => s.sessionId === "l")!.turns).toBe(2);
    log.close();
    expect(reader.list().sessions.find((s) => s.sessionId === "l")!.turns).toBe(2);
  });

  it("a fork of a padded log copies its lines, not its spaces", () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("src", header);
    log.append({ type: "turn/start", seq: 1, time: 1, data: { turn: 1 } } as SessionEvent);
    log.append(userMessage(2));
    log.sync();
    log.unlock();
    expect(store.fork("src", "copy", undefined)).toBeUndefined();
    const text = fs.readFileSync(store.pathOf("copy"), "utf8");
    expect(text).toMatch(/\}\n$/);
    expect(parsedLines(store.pathOf("copy"))).toHaveLength(3);
    const copy = store.open("copy", header);
    expect(copy.loadedEvents.map((e) => e.seq)).toEqual([1, 2]);
    copy.close();
    log.close();
  });
});
