/**
 * The viewer following a log a bridge has open: its last line ends in spaces that the next lines
 * are written over (log-tail.ts), so a page's cursor must not pass them, and a line being
 * written over them (a line of pieces, json-line.ts) is not shown before it is whole; and the
 * list cache, which a line written over them leaves the size of, must see it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LogTail } from "../../src/agent/store/log-tail.js";
import { listSessions, readPage, type ListCache, type SessionPage } from "../../src/viewer/log-reader.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-viewer-tail-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const id = "s1";
const header = JSON.stringify({ type: "session-header", version: 1, sessionId: id, workspace: "/w", createdAt: 1000, provider: "scripted", model: "demo" });
const event = (seq: number, text = "hi") => JSON.stringify({ type: "user/message", seq, time: 1000 + seq, data: { id: `u${seq}`, content: [{ type: "text", text }] } });

function page(from: number): SessionPage {
  const answer = readPage(dir, id, from);
  if (typeof answer === "string") throw new Error(answer);
  return answer;
}
const seqs = (p: SessionPage) => p.events.map((e) => e.seq);

it("a page's cursor stops at the last line's JSON, so the lines later written over its spaces are the next page's; a line in progress there waits until it is whole", () => {
  const file = path.join(dir, `${id}.jsonl`);
  fs.writeFileSync(file, `${header}\n`);
  const fd = fs.openSync(file, "r+");
  try {
    const tail = new LogTail(fd, fs.fstatSync(fd).size);
    tail.append(event(1));
    const first = page(0);
    expect(seqs(first)).toEqual([1]);
    // Nothing new yet: the same cursor, no events (the spaces are no line).
    const idle = page(first.next);
    expect(idle.events).toEqual([]);
    expect(idle.next).toBe(first.next);
    tail.append(event(2));
    tail.append(event(3));
    const second = page(first.next);
    expect(seqs(second)).toEqual([2, 3]);
    // A line of pieces half written over the spaces: its "\n" and the first piece.
    fs.writeSync(fd, `\n${event(4, "x".repeat(5000)).slice(0, 100)}`, tail.end);
    const waiting = page(second.next);
    expect(waiting.events).toEqual([]);
    expect(waiting.next).toBe(second.next);
    tail.append(event(4, "x".repeat(5000)));
    expect(seqs(page(second.next))).toEqual([4]);
    // Closed: the spaces trimmed, the cursor still a line start.
    tail.trim();
    expect(page(page(second.next).next).events).toEqual([]);
  } finally {
    fs.closeSync(fd);
  }
});

it("the list cache sees a line written over the spaces though the log's size, and its mtime (coarse on many file systems), did not change", () => {
  const file = path.join(dir, `${id}.jsonl`);
  fs.writeFileSync(file, `${header}\n`);
  const fd = fs.openSync(file, "r+");
  try {
    const tail = new LogTail(fd, fs.fstatSync(fd).size);
    tail.append(JSON.stringify({ type: "turn/start", seq: 1, time: 1001, data: { turn: 1 } }));
    fs.utimesSync(file, 1000, 1000);
    const cache: ListCache = new Map();
    expect(listSessions(dir, cache).sessions[0]!.turns).toBe(1);
    const { size } = fs.statSync(file);
    tail.append(JSON.stringify({ type: "turn/start", seq: 2, time: 1002, data: { turn: 2 } }));
    // Written within the same clock tick: the same mtime.
    fs.utimesSync(file, 1000, 1000);
    expect(fs.statSync(file).size).toBe(size);
    expect(listSessions(dir, cache).sessions[0]!.turns).toBe(2);
  } finally {
    fs.closeSync(fd);
  }
});
