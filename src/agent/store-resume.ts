/**
 * Resuming after a compaction: where a session log's replay may start, so that a session
 * compacted once is resumed from its compacted history without reading what came before into
 * memory (agent/compaction.ts). The history before `context/compacted`'s `keptFromSeq` is the
 * summary: replaying from that event's line on rebuilds exactly what the session had.
 *
 * The log is searched backwards for the last line that starts `{"type":"context/compacted",`
 * (`\n` then that text only occurs at the start of a line: JSON escapes the newlines and quotes
 * of strings), then for the line of `keptFromSeq`, by seq, with the bisection `session/read`
 * pages with (log-lines.ts: seqs grow along the log). A log without compaction is searched with
 * `Buffer.lastIndexOf` chunk by chunk, a small cost beside parsing it, and replayed whole.
 *
 * @module
 */
import * as fs from "node:fs";
import type { SessionEvent } from "../protocol/index.js";
import { eachLine, lineHead, seekAfterSeq } from "./log-lines.js";

const CHUNK = 1 << 20;
const COMPACTED = Buffer.from('\n{"type":"context/compacted","seq":');

/** The byte offset to replay `file` from (the start of a line), or `from` (all of it) when it was never compacted or the search finds no sure answer. */
export function replayOffset(fd: number, size: number, from: number): number {
  try {
    const compacted = lastLineStarting(fd, COMPACTED, from, size);
    if (compacted === undefined) return from;
    // Only a whole line (ended by "\n") counts: the replay never visits a torn last line, so a
    // compaction it would start after must be one the replay absorbs.
    let kept: unknown;
    eachLine(fd, compacted, (line) => {
      kept = (JSON.parse(line.toString("utf8")) as { data?: { keptFromSeq?: unknown } }).data?.keptFromSeq;
      return false;
    });
    if (typeof kept !== "number" || !Number.isSafeInteger(kept)) return from;
    // The kept history's first line: found by seq, as session/read pages are (log-lines.ts).
    const keptFrom = kept;
    let found: number | undefined;
    eachLine(fd, seekAfterSeq(fd, from, compacted, keptFrom - 1), (line, start) => {
      if (start >= compacted) return false;
      const { seq } = lineHead(line);
      if (seq === undefined || seq < keptFrom) return true;
      if (seq === keptFrom) found = start;
      return false;
    });
    return found ?? from;
  } catch {
    return from;
  }
}

/** The start of the last line in `[from, to)` beginning with `marker` (which starts with `\n`). */
function lastLineStarting(fd: number, marker: Buffer, from: number, to: number): number | undefined {
  // `from` is itself a line start: look one byte before it, where a "\n" ends the header.
  const at = lastIndexIn(fd, marker, Math.max(0, from - 1), to);
  return at === undefined ? undefined : at + 1;
}

/** The last position of `needle` wholly inside `[from, to)`, read backwards in chunks. */
function lastIndexIn(fd: number, needle: Buffer, from: number, to: number): number | undefined {
  let end = to;
  while (end - from >= needle.length) {
    const start = Math.max(from, end - CHUNK);
    const buf = Buffer.allocUnsafe(end - start);
    fs.readSync(fd, buf, 0, buf.length, start);
    const i = buf.lastIndexOf(needle);
    if (i >= 0) return start + i;
    if (start === from) return undefined;
    // Overlap so a needle across the chunk boundary is found.
    end = start + needle.length - 1;
  }
  return undefined;
}

/** The first `user/message` event in the lines of [`from`, `to`), read from the front (it is near the top: a session starts with one). */
export function firstUserMessage(fd: number, from: number, to: number): SessionEvent | undefined {
  let found: SessionEvent | undefined;
  eachLine(fd, from, (line, start) => {
    if (start >= to) return false;
    const { type } = lineHead(line);
    if (type !== undefined && type !== "user/message") return true;
    try {
      // A line not in the usual shape is parsed whole to learn its type.
      const event = JSON.parse(line.toString("utf8")) as SessionEvent;
      if (event.type !== "user/message") return true;
      found = event;
    } catch {
      // a corrupt line: no title from it
    }
    return false;
  });
  return found;
}
