/**
 * What both grep engines do with one candidate file: open it race-free, skip it
 * when too large or binary, and cut its text into lines. Every line shown to the model comes from
 * a descriptor opened here, so a file listed through a folder swapped for a symbolic link is
 * refused or read from inside the workspace, never from outside. The text is decoded by the
 * caller: all of it to match every line (the built-in engine, `splitLines`), or only the lines
 * ripgrep numbered (`numberedLines`).
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
 * a walk listed), classifies it and, if it is text, reads it — at most the size seen at open, so
 * a growing file cannot exceed the cap; with `lines`, no further than the end of that many
 * lines (ripgrep numbered the ones wanted) — and closes it.
 */
export async function readCandidate(open: OpenCandidate, abs: string, lines = Infinity): Promise<Candidate> {
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
    const buf = await readUpTo(fd, size, lines);
    if (buf.subarray(0, GREP_BINARY_SNIFF_BYTES).includes(0)) return { kind: "binary" };
    return { kind: "text", bytes: buf };
  } catch (err) {
    rethrowIfOutOfDescriptors(err);
    return { kind: "unreadable" };
  } finally {
    opened.close();
  }
}

/** Past the first `SYNC_READ_BYTES`, a read of the first `lines` lines asks for this much at a time. */
const LINES_READ_BYTES = 256 * 1024;

/** Reads at most `size` bytes from the start of the file, stopping once `lines` newlines were read. */
async function readUpTo(fd: number, size: number, lines: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  let newlines = 0;
  while (at < size && newlines < lines) {
    const want = lines === Infinity ? size - at : Math.min(size - at, at === 0 ? SYNC_READ_BYTES : LINES_READ_BYTES);
    const bytesRead = want <= SYNC_READ_BYTES ? fs.readSync(fd, buf, at, want, at) : (await readAsync(fd, buf, at, want, at)).bytesRead;
    if (bytesRead === 0) break;
    if (lines !== Infinity) {
      const read = buf.subarray(0, at + bytesRead);
      for (let i = read.indexOf(10, at); i !== -1; i = read.indexOf(10, i + 1)) newlines++;
    }
    at += bytesRead;
  }
  return buf.subarray(0, at);
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

/**
 * Lines `numbers` (1-based) of `bytes`, each as `splitLines` of the whole decoded text gives it,
 * in an array as long as the text's lines up to the largest of them (the others are holes).
 * Only those lines are decoded, and nothing past the largest is scanned: ripgrep numbered the
 * matching lines of a file, often a few near the top of a large one, and the grep shows only
 * them (bench/README.md). A UTF-8 sequence never holds the byte `\n`, so decoding line by line
 * gives what decoding the whole text would.
 */
export function numberedLines(bytes: Buffer, numbers: readonly number[]): string[] {
  const wanted = new Set(numbers);
  const last = numbers.reduce((a, b) => Math.max(a, b), 0);
  const lines: string[] = [];
  let count = 0;
  for (let start = 0; count < last && start < bytes.length; ) {
    const newline = bytes.indexOf(10, start);
    const end = newline === -1 ? bytes.length : newline;
    count++;
    if (wanted.has(count)) lines[count - 1] = bytes.toString("utf8", start, end > start && bytes[end - 1] === 13 ? end - 1 : end);
    start = end + 1;
  }
  lines.length = count;
  return lines;
}
