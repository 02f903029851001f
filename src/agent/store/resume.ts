/**
 * Loading a session log to resume it (`loadLog`: the header, the events, a torn last line cut)
 * and, after a compaction, where its replay may start (`replayOffset`), so that a session
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
import type { SessionEvent } from "../../protocol/index.js";
import { eventShapeProblem } from "./event-shape.js";
import { headerOf, noSeqLeft, openForReading, SESSION_FILE_MODE, SessionLogError, type SessionHeader } from "./log-format.js";
import { eachLine, jsonBeforeSpaces, jsonOfTornTail, lineHead, MAX_NESTING, parsedTooDeep, seekAfterSeq } from "./log-lines.js";

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

/**
 * The event `bytes` parse to, if the history can hold it: the JSON kept before the spaces of a
 * torn last line (log-lines.ts `jsonBeforeSpaces`) must be one, else the whole line is torn.
 * Loading and `session/read` (file-catalog.ts) keep the same lines.
 */
export function keptEvent(bytes: Buffer): SessionEvent | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return parsedTooDeep(bytes, value) || eventShapeProblem(value) ? undefined : (value as SessionEvent);
  } catch {
    return undefined;
  }
}

/** What `loadLog` found: the header, the events to replay, the first user message when the replay skipped it, and a descriptor to write it (read and write, no `O_APPEND`: log-tail.ts). */
export interface LoadedLog {
  header: SessionHeader;
  events: SessionEvent[];
  titleSource: SessionEvent | undefined;
  fd: number;
}

/**
 * Loads a session log for writing; `undefined` when not even its header is whole (killed
 * while writing it: start afresh). A torn last line is cut, and the spaces a bridge left after
 * the last line (log-tail.ts; killed before it closed the log) are trimmed: the caller holds
 * the session's lock (file-store.ts), so it is no other process's write in progress.
 */
export function loadLog(file: string): LoadedLog | undefined {
  // Read by lines from the file, not as one string: no copy of the whole log in memory beside
  // its events, and no limit from V8's longest string (a log past ~512 MiB could not load).
  // After a compaction only the header and the lines from the last `context/compacted`'s kept
  // history on are read (`replayOffset`): the bytes between are never loaded.
  const reader = openForReading(file);
  let header: SessionHeader | undefined;
  /** The first line is JSON but no session header. */
  let notAHeader = false;
  const events: SessionEvent[] = [];
  let size: number;
  let lines = 0;
  /** Where an unparsable whole line starts: only the last whole line may be one (a torn write). */
  let unparsable: { start: number; line: number } | undefined;
  /** Where a line starts whose JSON the rest of a torn line follows after spaces (`jsonBeforeSpaces`): it too must be the last. */
  let glued: { start: number; line: number } | undefined;
  /** The last line is one kept from a torn piece (no "\n" after its spaces): its "\n" is written. */
  let tornAfterSpaces = false;
  let whole: number;
  /** The first user message, when the replay skipped it (the session's title comes from it). */
  let titleSource: SessionEvent | undefined;
  /** The replay skipped the history before the last compaction (line numbers are then unknown). */
  let skipped = false;
  /** The highest seq of the events read: where the session's numbering goes on. */
  let highest = 0;
  /** The last parsable line: where its JSON ends (its spaces, if any, follow) and where it ends. */
  let last = { jsonEnd: 0, end: 0 };
  const where = (line: number, start: number): string => (skipped ? `byte ${start}` : `line ${line}`);
  const visit = (bytes: Buffer, start: number, end: number): boolean => {
    lines += 1;
    const bad = unparsable ?? glued;
    if (bad) {
      // Anything but the last whole line is corruption we must not paper over.
      throw new SessionLogError(`session log ${file} is corrupt at ${where(bad.line, bad.start)}; move it away to start the session afresh`);
    }
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString("utf8"));
    } catch {
      // A whole but unparsable last line is a torn write too (its bytes reached the disk out of
      // order). One written over the spaces may have reached it without its first page: the last
      // line's JSON, spaces, the rest of the torn line. That JSON is kept, as a padded last line.
      const before = header && jsonBeforeSpaces(bytes);
      if (before && keptEvent(before)) {
        lines -= 1;
        visit(before, start, end);
        glued = { start, line: lines };
        return true;
      }
      unparsable = { start, line: lines };
      return true;
    }
    last = { jsonEnd: start + bytes.length, end };
    // Parsed, but nested too deep for anything done with it next (JSON.stringify recurses): the
    // replay would fail with a RangeError, reported as an internal error (log-lines.ts).
    if (parsedTooDeep(bytes, value)) {
      throw new SessionLogError(`session log ${file} is corrupt at ${where(lines, start)}: nested deeper than ${MAX_NESTING} levels; move it away to start the session afresh`);
    }
    if (header) {
      // JSON that is no event, or an event the history cannot hold, is no torn write: refuse it.
      const problem = eventShapeProblem(value);
      if (problem) throw new SessionLogError(`session log ${file} is corrupt at ${where(lines, start)}: ${problem}; move it away to start the session afresh`);
      events.push(value as SessionEvent);
      if ((value as SessionEvent).seq > highest) highest = (value as SessionEvent).seq;
    } else {
      header = headerOf(value);
      notAHeader = !header;
    }
    return true;
  };
  try {
    size = fs.fstatSync(reader).size;
    // The header line first, then the replay from where the last compaction lets it start.
    let headerEnd = 0;
    whole = eachLine(reader, 0, (bytes, start, end) => {
      headerEnd = end;
      visit(bytes, start, end);
      return false;
    });
    // An unparsable header with more after it is no torn write (a kill tears only the last
    // line): starting afresh would write over the history that follows, so refuse it.
    if (!header && unparsable && size > headerEnd) {
      throw new SessionLogError(`session log ${file} is corrupt at line 1 (its header); move it away to start the session afresh`);
    }
    if (header && !unparsable) {
      const from = replayOffset(reader, size, headerEnd);
      if (from > headerEnd) {
        titleSource = firstUserMessage(reader, headerEnd, from);
        skipped = true;
      }
      whole = eachLine(reader, from, visit);
      // A torn last piece that is the last line's JSON and its spaces: a longer line written
      // over them ran over the final "\n", and a power loss kept that but not the line's first
      // page (its "\n") nor the file's growth. That JSON is kept, as a padded last line.
      const bytes = unparsable || glued ? undefined : jsonOfTornTail(reader, whole, size);
      if (bytes && keptEvent(bytes)) {
        visit(bytes, whole, size);
        tornAfterSpaces = true;
        whole = size;
      }
    }
  } finally {
    fs.closeSync(reader);
  }
  // Only lines followed by "\n" are whole; what follows the last one is a torn write.
  const padded = !unparsable && last.end === whole && (tornAfterSpaces || last.jsonEnd + 1 < whole);
  const goodBytes = unparsable ? unparsable.start : padded ? last.jsonEnd + 1 : whole;
  if (notAHeader) throw new SessionLogError(`session log ${file} does not start with a session header; move it away to start the session afresh`);
  if (!header) return undefined; // killed while writing the header: start afresh
  // No seq left for a next event: refused before anything is cut or written (session.ts `emit`).
  if (highest >= Number.MAX_SAFE_INTEGER) throw noSeqLeft(`session log ${file}`, highest);
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW, SESSION_FILE_MODE);
  try {
    fs.fchmodSync(fd, SESSION_FILE_MODE);
    // The last line's "\n" before its spaces go, so no moment leaves it without one.
    if (padded) fs.writeSync(fd, "\n", last.jsonEnd);
    if (goodBytes < size) fs.ftruncateSync(fd, goodBytes);
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
  return { header, events, titleSource, fd };
}
