/**
 * What both grep engines do with one candidate file: open it race-free, skip it
 * when too large or binary, and cut its text into lines. Every line shown to the model comes from
 * a descriptor opened here, so a file listed through a folder swapped for a symbolic link is
 * refused or read from inside the workspace, never from outside.
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

export type Candidate = { kind: "text"; bytes: Buffer; text: string } | { kind: "large" } | { kind: "binary" } | { kind: "unreadable" };

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
 * a walk listed), classifies it and, if it is text, reads it whole — at most the size seen at
 * open, so a growing file cannot exceed the cap — and closes it.
 */
export async function readCandidate(open: OpenCandidate, abs: string): Promise<Candidate> {
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
    const buf = await readUpTo(fd, size);
    if (buf.subarray(0, GREP_BINARY_SNIFF_BYTES).includes(0)) return { kind: "binary" };
    return { kind: "text", bytes: buf, text: buf.toString("utf8") };
  } catch (err) {
    rethrowIfOutOfDescriptors(err);
    return { kind: "unreadable" };
  } finally {
    opened.close();
  }
}

/** Reads at most `size` bytes from the start of the file. */
async function readUpTo(fd: number, size: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  while (at < size) {
    const bytesRead = size - at <= SYNC_READ_BYTES ? fs.readSync(fd, buf, at, size - at, at) : (await readAsync(fd, buf, at, size - at, at)).bytesRead;
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return buf.subarray(0, at);
}

/**
 * The lines of a text: split at `\n`, a `\r` before it dropped (CRLF files), no empty line after
 * a final newline (an empty file has no lines), a final `\r` dropped. ripgrep (`--crlf`) counts
 * lines the same way.
 */
export function splitLines(text: string): string[] {
  const normal = text.includes("\r\n") ? text.replace(/\r\n/g, "\n") : text;
  const lines = normal.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const last = lines.length - 1;
  if (last >= 0 && lines[last].endsWith("\r")) lines[last] = lines[last].slice(0, -1); // a final CR ends the line too
  return lines;
}
