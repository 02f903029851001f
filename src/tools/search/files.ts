/**
 * What both grep engines do with one candidate file: open it race-free (`openForRead`), skip it
 * when too large or binary, and cut its text into lines. Every line shown to the model comes from
 * a descriptor opened here, so a file listed through a folder swapped for a symbolic link is
 * refused or read from inside the workspace, never from outside.
 */
import type { FileHandle } from "node:fs/promises";
import type { PermissionMode } from "../../protocol/index.js";
import { openForRead } from "../confined-fs.js";

/** Files larger than this are skipped (and counted in the result). */
export const GREP_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** A file with a NUL byte in its first this-many bytes is binary and skipped. */
export const GREP_BINARY_SNIFF_BYTES = 8192;

export type Candidate = { kind: "text"; bytes: Buffer; text: string } | { kind: "large" } | { kind: "binary" } | { kind: "unreadable" };

/**
 * Opens `abs` (inside the workspace, or anywhere in `full` mode) race-free, classifies it and,
 * if it is text, reads it whole — at most the size seen at open, so a growing file cannot exceed
 * the cap — and closes it.
 */
export async function readCandidate(workspace: string, abs: string, mode: PermissionMode): Promise<Candidate> {
  let opened;
  try {
    opened = await openForRead(workspace, abs, mode);
  } catch {
    return { kind: "unreadable" }; // vanished, not a regular file, or leads outside: skipped silently
  }
  const { handle, size } = opened;
  try {
    if (size > GREP_MAX_FILE_BYTES) return { kind: "large" };
    const buf = await readUpTo(handle, size);
    if (buf.subarray(0, GREP_BINARY_SNIFF_BYTES).includes(0)) return { kind: "binary" };
    return { kind: "text", bytes: buf, text: buf.toString("utf8") };
  } catch {
    return { kind: "unreadable" };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Reads at most `size` bytes from the start of the file. */
export async function readUpTo(handle: FileHandle, size: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  while (at < size) {
    const { bytesRead } = await handle.read(buf, at, size - at, at);
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
