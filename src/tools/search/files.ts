/**
 * What both grep engines do with one candidate file: open it race-free, skip it
 * when too large or binary, and read its text: all of it, to match every line (the built-in
 * engine, `readCandidate`, `splitLines`), or only the lines ripgrep matched (`readMatchedLines`).
 * Every line shown to the model comes from a descriptor opened here, so a file listed through a
 * folder swapped for a symbolic link is refused or read from inside the workspace, never from
 * outside.
 */
import * as fs from "node:fs";
import { promisify } from "node:util";
import type { PermissionMode } from "../../protocol/index.js";
import { openForRead } from "../confined-fs.js";
import { rethrowIfOutOfDescriptors } from "../out-of-descriptors.js";

/** Files larger than this are skipped (and counted in the result). */
export const GREP_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** A file with a NUL byte in its first this-many bytes is binary and skipped. */
export const GREP_BINARY_SNIFF_BYTES = 8192;

export type Candidate = { kind: "text"; bytes: Buffer } | { kind: "large" } | { kind: "binary" } | { kind: "unreadable" };

/** A candidate opened race-free: its descriptor, the size seen at open, and how to let it go. */
export interface OpenedCandidate {
  fd: number;
  size: number;
  close(): unknown;
}

/** Opens a candidate race-free, or answers `undefined` (or throws) when it is not to be read. */
export type OpenCandidate = (abs: string) => Promise<OpenedCandidate | undefined> | OpenedCandidate | undefined;

/** The opener of a file named by the model (followed through links, as `read_file` follows them). */
export function openNamed(workspace: string, mode: PermissionMode): OpenCandidate {
  return async (abs) => {
    const { handle, size } = await openForRead(workspace, abs, mode);
    return { fd: handle.fd, size, close: () => handle.close().catch(() => undefined) };
  };
}

/**
 * Files up to this size are read with one blocking `read` (from the page cache, microseconds:
 * cheaper than a trip through libuv's thread pool, which on a busy machine costs more than the
 * read); larger ones are read off the event loop.
 */
const SYNC_READ_BYTES = 64 * 1024;

const readAsync = promisify(fs.read);

/**
 * Opens `abs` with `open` (race-free: `openNamed`, or `ShownPathCheck.openShownFile` for a name
 * a walk listed) and classifies it; `use` gets the descriptor's bytes (never more than the size
 * seen at open, so a growing file cannot exceed the cap) and the first of them, which the binary
 * sniff read. The file is closed when `use` is done.
 */
async function withCandidate<T>(open: OpenCandidate, abs: string, headBytes: number, use: (read: ReadAt, size: number, head: Buffer) => Promise<T>): Promise<T | Exclude<Candidate, { kind: "text" }>> {
  let opened;
  try {
    opened = await open(abs);
  } catch (err) {
    rethrowIfOutOfDescriptors(err);
    opened = undefined;
  }
  if (!opened) return { kind: "unreadable" }; // vanished, not a regular file, or leads outside: skipped silently
  const { fd, size } = opened;
  try {
    if (size > GREP_MAX_FILE_BYTES) return { kind: "large" };
    const read = readFd(fd, size);
    const head = await read(0, Math.min(size, Math.max(headBytes, GREP_BINARY_SNIFF_BYTES)));
    if (head.subarray(0, GREP_BINARY_SNIFF_BYTES).includes(0)) return { kind: "binary" };
    return await use(read, size, head);
  } catch (err) {
    rethrowIfOutOfDescriptors(err);
    return { kind: "unreadable" };
  } finally {
    opened.close();
  }
}

/** Opens `abs` race-free (see `withCandidate`) and, if it is text, reads all of it (the built-in engine matches every line). */
export function readCandidate(open: OpenCandidate, abs: string): Promise<Candidate> {
  return withCandidate(open, abs, SYNC_READ_BYTES, async (read, size, head) => {
    const rest = head.length < size ? await read(head.length, size - head.length) : undefined;
    return { kind: "text", bytes: rest ? Buffer.concat([head, rest]) : head };
  });
}

/** A line ripgrep matched: its 1-based number and the byte offset where it starts (`--byte-offset`). */
export interface LineMatch {
  line: number;
  offset: number;
}

/** A candidate's lines that ripgrep matched, as `[number, text]`. */
export type MatchedLines = Exclude<Candidate, { kind: "text" }> | { kind: "text"; lines: [number, string][] };

/**
 * Opens `abs` race-free (see `withCandidate`) and, if it is text, reads only the lines `matches`
 * (`linesAt`): ripgrep found them, and a file is shown by a few of its lines, often near the top
 * of a large one (bench/README.md).
 */
export function readMatchedLines(open: OpenCandidate, abs: string, matches: readonly LineMatch[]): Promise<MatchedLines> {
  return withCandidate(open, abs, GREP_BINARY_SNIFF_BYTES, async (read, size, head) => ({ kind: "text", lines: await linesAt(read, size, matches, head) }));
}

/** Reads up to `len` bytes at `pos` (fewer at the end of the data). */
export type ReadAt = (pos: number, len: number) => Promise<Buffer>;

/** Reads of descriptor `fd`, never past `size` (the size seen at open). */
function readFd(fd: number, size: number): ReadAt {
  return async (pos, len) => {
    const want = Math.max(0, Math.min(len, size - pos));
    const buf = Buffer.allocUnsafe(want);
    const bytesRead = want === 0 ? 0 : want <= SYNC_READ_BYTES ? fs.readSync(fd, buf, 0, want, pos) : (await readAsync(fd, buf, 0, want, pos)).bytesRead;
    return buf.subarray(0, bytesRead);
  };
}

/** The reads of bytes already in memory (a single file, read whole to be piped to ripgrep). */
export function readBytes(bytes: Buffer): ReadAt {
  return async (pos, len) => bytes.subarray(pos, pos + len);
}

/**
 * Bytes a line's read asks for first (lines near it come with it); a longer line is read on in
 * steps as large as what was read so far (doubling: a minified line of a MiB takes ~8 reads).
 * Small reads, because what a capped search costs is mostly per file and per byte: most shown
 * lines are short, and each file's first `GREP_BINARY_SNIFF_BYTES` are read anyway.
 */
const LINE_WINDOW_BYTES = 4 * 1024;

/**
 * The text of the lines `matches` (in increasing offsets) of data of `size` bytes read with
 * `read` (`head`: its first bytes, already read), each as `splitLines` of the whole decoded text
 * gives it: up to the next `\n` or the end, one `\r` before that end dropped. A UTF-8 sequence
 * never holds the byte `\n`, so decoding line by line gives what decoding the whole text would.
 * Nothing but those lines (and the byte before each) is read, and each is decoded alone.
 *
 * A match that does not start a line of these bytes — at or past their end, or not after a
 * `\n` — is dropped: the file changed since ripgrep read it (or ripgrep read another file, through
 * a folder swapped meanwhile); its offsets are applied to the bytes opened here, or not at all.
 * `window`/`grow` are the read sizes (tests make them small to cross read boundaries).
 */
export async function linesAt(
  read: ReadAt,
  size: number,
  matches: readonly LineMatch[],
  head: Buffer = Buffer.alloc(0),
  window = LINE_WINDOW_BYTES,
  grow = LINE_WINDOW_BYTES,
): Promise<[number, string][]> {
  const out: [number, string][] = [];
  // The bytes read last, from `at` on: lines near each other share one read.
  let buf = head;
  let at = 0;
  for (const { line, offset } of matches) {
    if (offset >= size) continue;
    const from = Math.max(0, offset - 1); // the byte before the line must be a newline
    if (from < at || offset >= at + buf.length) {
      at = from;
      buf = await read(from, Math.min(Math.max(window, offset - from + 1), size - from));
    }
    if (offset >= at + buf.length) continue; // the data ended early (the file shrank)
    if (offset > 0 && buf[offset - 1 - at] !== 10) continue;
    let end = buf.indexOf(10, offset - at);
    while (end === -1 && at + buf.length < size) {
      const more = await read(at + buf.length, Math.max(grow, buf.length));
      if (more.length === 0) break;
      const scanned = buf.length;
      buf = Buffer.concat([buf, more]);
      end = buf.indexOf(10, scanned);
    }
    if (end === -1) end = buf.length;
    const start = offset - at;
    out.push([line, buf.toString("utf8", start, end > start && buf[end - 1] === 13 ? end - 1 : end)]);
  }
  return out;
}

/**
 * The lines of a text: split at `\n`, a `\r` before it dropped (CRLF files), no empty line after
 * a final newline (an empty file has no lines), a final `\r` without a `\n` after it dropped.
 * ripgrep (`--crlf`) counts lines the same way.
 */
export function splitLines(text: string): string[] {
  const normal = text.includes("\r\n") ? text.replace(/\r\n/g, "\n") : text;
  const lines = normal.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const last = lines.length - 1;
  // A final CR ends the line too (a last line without "\n"); a last line ended by "\n" loses one CR, as every other line does.
  if (last >= 0 && !normal.endsWith("\n") && lines[last].endsWith("\r")) lines[last] = lines[last].slice(0, -1);
  return lines;
}
