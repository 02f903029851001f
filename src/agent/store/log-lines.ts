/**
 * Reading a session log by lines, from an open file descriptor, without loading it whole:
 * what `session/list`, `session/read` and `session/fork` need of logs they do not hold open.
 *
 * Only lines ended by "\n" are whole; a last piece without one is a torn write (or one in
 * progress in another process) and is never visited. The last line of a log a bridge has open
 * ends in spaces that its next lines will be written over (log-tail.ts); JSON allows them after
 * a value, and a line is visited without them. Those bytes change under a reader that takes no
 * lock: one read may end in the spaces and the next begin in a line written over them since,
 * which would glue that line onto the last; such a line is read again (`jsonBeforeSpaces`).
 *
 * Every event line starts `{"type":"…","seq":N,"time":T`, because `Session.emit` builds each
 * event with its keys in that order and the log holds it exactly as it was announced. So a
 * line's type, seq and time can be read from its first bytes (`lineHead`) without parsing the
 * rest; whatever does not match that shape is parsed whole, so a line written otherwise is
 * still read correctly, only slower.
 *
 * @module
 */
import * as fs from "node:fs";
import { exceedsDepth } from "../../json-depth.js";

const CHUNK = 1024 * 1024;
const HEAD_BYTES = 256;
const HEAD = /^\{"type":"([^"\\]{1,64})","seq":(\d{1,16}),"time":(\d{1,16})[,}]/;

/** Type, seq and time of an event line, from its first bytes; all undefined when the line does not start in the usual shape. */
export function lineHead(line: Buffer): { type?: string; seq?: number; time?: number } {
  const match = HEAD.exec(line.toString("latin1", 0, Math.min(line.length, HEAD_BYTES)));
  return match ? { type: match[1], seq: Number(match[2]), time: Number(match[3]) } : {};
}

/**
 * The deepest nesting of arrays and objects a line read from a log may have to be handed on.
 * JSON.parse takes any depth, but JSON.stringify recurses and throws past a few thousand levels:
 * a line nested that deep (a damaged or planted log) could be read but never sent. A log is a
 * boundary like those of json-depth.ts, measured here on the bytes before parsing; what the
 * bridge writes nests at most `MAX_JSON_DEPTH` (128) levels inside an event's few own, so this
 * limit is far above any event it writes.
 */
export const MAX_NESTING = 512;

/**
 * Whether `value`, parsed from the log line `bytes`, nests deeper than `MAX_NESTING`. Cheap on
 * the replay's path: a line too short to hold that many brackets is not measured, and a parsed
 * value is measured by its nodes (a long text is one), not its bytes.
 */
export function parsedTooDeep(bytes: Buffer, value: unknown): boolean {
  return bytes.length > 2 * MAX_NESTING && exceedsDepth(value, MAX_NESTING);
}

/** Whether the JSON text `bytes` nests arrays and objects deeper than `MAX_NESTING` (brackets inside strings do not count). */
export function nestedTooDeep(bytes: Buffer): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === 0x5c) i++; // a backslash: the next byte is escaped
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > MAX_NESTING) return true;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return false;
}

/**
 * Visits each whole line from byte `from` (a line start) on, with its start and end offsets
 * (end: after its "\n"), until `visit` returns false or the whole lines run out. Returns the
 * offset after the last line visited and accepted.
 *
 * `maxLine`: a longer line is never held whole (a file is not bounded by what the bridge
 * writes: a huge sparse file, or one without a newline, would be held whole in memory): it is
 * visited with its first `HEAD_BYTES` only, and `cut` true. Unbounded by default.
 */
export function eachLine(fd: number, from: number, visit: (line: Buffer, start: number, end: number, cut: boolean) => boolean, maxLine = Infinity): number {
  // Most logs a listing scans are small: a buffer the size of what is left, up to CHUNK.
  const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK, fs.fstatSync(fd).size - from)));
  let position = from;
  let pending: Buffer[] = [];
  let held = 0; // bytes in `pending`
  let head: Buffer | undefined; // set once the line passed `maxLine`: its first bytes, all that is kept
  let lineStart = from;
  let accepted = from;
  // A read ended in spaces of the line held (those after an open log's last line: log-tail.ts),
  // and how often that line was read again because a line was written over them meanwhile.
  let spacesAtRead = false;
  let rereads = 0;
  // The first HEAD_BYTES of the line held so far and `piece` (no copy of the rest).
  const cutAt = (piece: Buffer): Buffer => {
    const parts: Buffer[] = [];
    let bytes = 0;
    for (const part of [...pending, piece]) {
      if (bytes >= HEAD_BYTES) break;
      parts.push(part.subarray(0, HEAD_BYTES - bytes));
      bytes += parts.at(-1)!.length;
    }
    return Buffer.concat(parts);
  };
  reading: for (;;) {
    const read = fs.readSync(fd, chunk, 0, chunk.length, position);
    if (read === 0) return accepted;
    let offset = 0;
    while (offset < read) {
      const newline = chunk.indexOf(10, offset);
      if (newline === -1 || newline >= read) {
        const piece = chunk.subarray(offset, read);
        if (head) {
          // past maxLine: only counted by the offsets
        } else if (held + piece.length > maxLine) {
          head = cutAt(piece);
          pending = [];
          held = 0;
        } else {
          pending.push(Buffer.from(piece));
          held += piece.length;
          spacesAtRead ||= piece.at(-1) === 0x20;
        }
        break;
      }
      const piece = chunk.subarray(offset, newline);
      if (!head && held + piece.length > maxLine) head = cutAt(piece);
      const cut = head !== undefined;
      const whole = head ?? (pending.length ? Buffer.concat([...pending, piece]) : piece);
      const line = cut ? whole : withoutSpaces(whole);
      pending = [];
      held = 0;
      head = undefined;
      // The spaces read before a line was written over them, and that line's rest after: read
      // this line again, now that the writer's "\n" ends it (log-tail.ts; a bound for a line
      // that really holds its JSON, spaces and more).
      if (spacesAtRead && !cut && rereads < 3 && jsonBeforeSpaces(line)) {
        rereads++;
        spacesAtRead = false;
        position = lineStart;
        continue reading;
      }
      spacesAtRead = false;
      rereads = 0;
      const end = position + newline + 1;
      if (!visit(line, lineStart, end, cut)) return accepted;
      accepted = end;
      lineStart = end;
      offset = newline + 1;
    }
    position += read;
  }
}

/**
 * Finds where a JSON object that begins a text ends, fed the text piece by piece (strings and
 * their escapes skipped, arrays and objects counted), so a piece read from a file and a line in
 * memory are scanned alike.
 */
class ObjectEnd {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private started = false;

  /** After `piece`: the index in it just past the object's closing brace, `undefined` while the object is open, `-1` when the text does not start with one. */
  feed(piece: Buffer): number | undefined {
    for (let i = 0; i < piece.length; i++) {
      const byte = piece[i]!;
      if (!this.started) {
        if (byte !== 0x7b) return -1;
        this.started = true;
      }
      if (this.escaped) this.escaped = false;
      else if (this.inString) {
        if (byte === 0x5c) this.escaped = true;
        else if (byte === 0x22) this.inString = false;
      } else if (byte === 0x22) this.inString = true;
      else if (byte === 0x5b || byte === 0x7b) this.depth++;
      else if ((byte === 0x5d || byte === 0x7d) && --this.depth === 0) return i + 1;
    }
    return undefined;
  }
}

/**
 * The JSON object `line` starts with, when a space and more follow it: two lines glued, by a read
 * across a write (see eachLine) or by a power loss that kept a later page of an unsynced line
 * written over the spaces but not its first, with its "\n" (resume.ts). `undefined` otherwise.
 */
export function jsonBeforeSpaces(line: Buffer): Buffer | undefined {
  const end = new ObjectEnd().feed(line);
  return end !== undefined && end > 0 && line[end] === 0x20 ? line.subarray(0, end) : undefined;
}

/**
 * Where the JSON object starting at byte `from` of `fd` ends, when a space follows it before
 * `to`: `jsonBeforeSpaces` over a piece with no "\n" (a torn last line), read in chunks.
 */
export function objectBeforeSpaceAt(fd: number, from: number, to: number): number | undefined {
  const chunk = Buffer.allocUnsafe(64 * 1024);
  const scan = new ObjectEnd();
  for (let position = from; position < to; ) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, to - position), position);
    if (read === 0) return undefined;
    const found = scan.feed(chunk.subarray(0, read));
    if (found === -1) return undefined;
    if (found !== undefined) {
      const end = position + found;
      return end < to && byteAt(fd, end) === 0x20 ? end : undefined;
    }
    position += read;
  }
  return undefined;
}

/**
 * The JSON that a torn last piece at [`from`, `size`) of `fd` starts with, when spaces follow it
 * (`objectBeforeSpaceAt`): the last line's JSON and its spaces, whose "\n" a power loss lost
 * (resume.ts). `undefined` otherwise. Loading, `session/read`, `session/fork` and the listing all
 * keep it. At most `maxBytes` of it are read (a listing holds no line whole past its cap).
 */
export function jsonOfTornTail(fd: number, from: number, size: number, maxBytes = Infinity): Buffer | undefined {
  const jsonEnd = from < size ? objectBeforeSpaceAt(fd, from, size) : undefined;
  if (jsonEnd === undefined) return undefined;
  const bytes = Buffer.alloc(Math.min(jsonEnd - from, maxBytes));
  for (let at = 0; at < bytes.length; ) at += fs.readSync(fd, bytes, at, bytes.length - at, from + at) || bytes.length;
  return bytes;
}

/**
 * The line a read found at [`start`, `end`) of an open log (`line`: without its spaces and "\n"),
 * looked at again as the file is now: `gone` when those bytes are no longer there, `followed` when
 * they are and a whole line follows them, `last` otherwise.
 *
 * Why: a read takes no lock, so another process may write or recover the log under it (append
 * over the spaces, run past them, or cut a torn last line and write in its place: log-tail.ts,
 * resume.ts), and a read in pieces can glue bytes from before such a write to bytes from after
 * it. But in a log no one damaged, no byte ever follows a line that does not parse: every line
 * is written at the tail under the session's lock, and a torn last line is cut before the next
 * one is written. So only a line still there, looked at in one read, with more after it, is
 * corruption; anything else is a torn last line, a line being written, or one read across a
 * write. `followed` asks for a whole line after it, as loading does (a torn piece after an
 * unparsable last whole line is a torn write too).
 */
export function lookAgain(fd: number, line: Buffer, start: number, end: number): "gone" | "last" | "followed" {
  // The line, its spaces, its "\n" and the byte after them, in one read.
  const now = Buffer.allocUnsafe(end - start + 1);
  const read = fs.readSync(fd, now, 0, now.length, start);
  if (read < end - start || now[end - start - 1] !== 0x0a || !now.subarray(0, line.length).equals(line)) return "gone";
  for (let i = line.length; i < end - start - 1; i++) if (now[i] !== 0x20) return "gone";
  if (read === end - start) return "last";
  let whole = false;
  eachLine(fd, end, () => {
    whole = true;
    return false;
  });
  return whole ? "followed" : "last";
}

/** The byte at `position` of `fd`, `undefined` past its end. */
export function byteAt(fd: number, position: number): number | undefined {
  const byte = Buffer.allocUnsafe(1);
  return position >= 0 && fs.readSync(fd, byte, 0, 1, position) === 1 ? byte[0] : undefined;
}

/** `line` without the spaces it ends in (log-tail.ts), if any. */
function withoutSpaces(line: Buffer): Buffer {
  let end = line.length;
  while (end > 0 && line[end - 1] === 0x20) end--;
  return end === line.length ? line : line.subarray(0, end);
}

/** The first line start at or after `pos`, or `limit` when no line starts in [`pos`, `limit`). */
function nextLineStart(fd: number, pos: number, limit: number): number {
  if (pos === 0) return 0;
  const chunk = Buffer.allocUnsafe(64 * 1024);
  // A line starts at `pos` when the byte before it is "\n".
  for (let at = pos - 1; at < limit; ) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, limit - at), at);
    if (read === 0) return limit;
    const newline = chunk.indexOf(10);
    if (newline !== -1 && newline < read) return Math.min(at + newline + 1, limit);
    at += read;
  }
  return limit;
}

/** The seq of the whole line starting at `start`, or undefined when none does (torn, not an event). */
function seqAt(fd: number, start: number): number | undefined {
  const head = Buffer.allocUnsafe(HEAD_BYTES);
  const read = fs.readSync(fd, head, 0, HEAD_BYTES, start);
  const seq = lineHead(head.subarray(0, read)).seq;
  if (seq !== undefined) return seq;
  let found: number | undefined;
  eachLine(fd, start, (line) => {
    try {
      const value = (JSON.parse(line.toString("utf8")) as { seq?: unknown }).seq;
      if (typeof value === "number") found = value;
    } catch {
      // not an event line
    }
    return false;
  });
  return found;
}

/**
 * A line start in [`from`, `size`) at or before the first line whose seq exceeds `afterSeq`,
 * found by bisection over byte offsets (seq increases along the log), so a page deep in a
 * log of a million events costs a few dozen small reads, not a scan from the top. The caller
 * scans on from there; the bisection stops once the range is small.
 */
export function seekAfterSeq(fd: number, from: number, size: number, afterSeq: number): number {
  let low = from; // every line before `low` has seq ≤ afterSeq
  let high = size; // a line start (or the end) whose line has seq > afterSeq, or the end
  let top = size; // the search range's end: no line start in [top, high)
  while (top - low > 64 * 1024) {
    const mid = low + Math.floor((top - low) / 2);
    const start = nextLineStart(fd, mid, high);
    if (start >= high) {
      top = mid;
      continue;
    }
    const seq = seqAt(fd, start);
    if (seq === undefined) break; // an odd line: scan from `low`
    if (seq > afterSeq) {
      high = start;
      top = start;
    } else low = start;
  }
  return low;
}

/** Copies bytes [`from`, `to`) of `source` to the end of `target`. */
export function copyRange(source: number, target: number, from: number, to: number): void {
  const chunk = Buffer.allocUnsafe(CHUNK);
  for (let at = from; at < to; ) {
    const read = fs.readSync(source, chunk, 0, Math.min(CHUNK, to - at), at);
    if (read === 0) throw new Error("the log was cut while it was being copied");
    for (let off = 0; off < read; ) off += fs.writeSync(target, chunk, off, read - off);
    at += read;
  }
}
