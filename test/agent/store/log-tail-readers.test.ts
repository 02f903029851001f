/**
 * Readers that take no lock (session/read, session/list, the viewer) over a log whose last line's
 * spaces a bridge is writing over (log-tail.ts): a reader that read some of those spaces before
 * a line was written over them, and the rest after, must not glue that line onto the last one;
 * and a listing must see that a log is padded whatever the length of its last line.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { eachLine } from "../../../src/agent/store/log-lines.js";
import { LogTail } from "../../../src/agent/store/log-tail.js";
import { SessionStore } from "../../../src/agent/store/index.js";
import { metaPathOf } from "../../../src/agent/store/log-format.js";
import { SCAN_LINE_CAP } from "../../../src/agent/store/summary.js";
import type { SessionEvent } from "../../../src/protocol/index.js";

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-tail-read-"));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** eachLine's read size: its second read starts here. */
const CHUNK = 1024 * 1024;
const line = (n: number, length: number) => `{"n":"${String(n).padStart(6, "0")}","t":"${"x".repeat(length - 21)}"}`;

it("a line written over the spaces between two reads of a reader is not glued onto the last line: every line visited parses", () => {
  const file = path.join(tmp, "log.jsonl");
  fs.writeFileSync(file, "{}\n");
  const fd = fs.openSync(file, "r+");
  try {
    const tail = new LogTail(fd, 3);
    // The last line's JSON ends 100 bytes before the reader's second read; its spaces run past it.
    const target = CHUNK - 100;
    let n = 0;
    while (target - tail.end > 2000) tail.append(line(++n, 1000));
    const last = line(++n, target - tail.end - 1);
    tail.append(last);
    expect(tail.end).toBe(target);
    expect(tail.size).toBeGreaterThan(CHUNK + 1000);
    const visited: string[] = [];
    let written = false;
    eachLine(fd, 0, (bytes) => {
      // Another process's bridge writes its next line once the reader's first read is done.
      if (!written) tail.append(line(n + 1, 500));
      written = true;
      visited.push(bytes.toString());
      return true;
    });
    for (const text of visited) expect(() => JSON.parse(text) as unknown, text.slice(0, 40)).not.toThrow();
    expect(visited.at(-2)).toBe(last);
    expect(visited.at(-1)).toBe(line(n + 1, 500));
  } finally {
    fs.closeSync(fd);
  }
});

it("a listing writes no meta from a padded log whose last line is longer than it reads whole: a line written over the spaces later changes no size", () => {
  const writer = new SessionStore(tmp, "/work/space");
  const reader = new SessionStore(tmp, "/work/space"); // another process
  const log = writer.open("big", { provider: "scripted", model: "demo" });
  const text = "x".repeat(SCAN_LINE_CAP);
  log.append({ type: "user/message", seq: 1, time: 1, data: { id: "u1", content: [{ type: "text", text }] } } as SessionEvent);
  log.sync();
  log.unlock();
  expect(reader.list().sessions.find((s) => s.sessionId === "big")!.turns).toBe(0);
  expect(fs.existsSync(metaPathOf(writer.pathOf("big")))).toBe(false);
  log.lock();
  log.append({ type: "turn/start", seq: 2, time: 2, data: { turn: 1 } } as SessionEvent);
  log.unlock();
  expect(reader.list().sessions.find((s) => s.sessionId === "big")!.turns).toBe(1);
  log.close();
});
