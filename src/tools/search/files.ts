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

export type Candidate =
  | { kind: "text"; handle: FileHandle; size: number }
  | { kind: "large" }
  | { kind: "binary" }
  | { kind: "unreadable" };

/** Opens `rel` (relative to the workspace, or absolute in `full` mode) and classifies it. A `text` candidate's handle must be closed by the caller. */
export async function openCandidate(workspace: string, rel: string, mode: PermissionMode): Promise<Candidate> {
  let opened;
  try {
    opened = await openForRead(workspace, rel, mode);
  } catch {
    return { kind: "unreadable" }; // vanished, not a regular file, or leads outside: skipped silently
  }
  const { handle, size } = opened;
  try {
    if (size > GREP_MAX_FILE_BYTES) {
      await handle.close();
      return { kind: "large" };
    }
    const sniff = Buffer.alloc(Math.min(GREP_BINARY_SNIFF_BYTES, size));
    const { bytesRead } = await handle.read(sniff, 0, sniff.length, 0);
    if (sniff.subarray(0, bytesRead).includes(0)) {
      await handle.close();
      return { kind: "binary" };
    }
    return { kind: "text", handle, size };
  } catch {
    await handle.close().catch(() => undefined);
    return { kind: "unreadable" };
  }
}

/** Reads at most `size` bytes (the size seen at open, so a growing file cannot exceed the cap). */
export async function readText(handle: FileHandle, size: number): Promise<string> {
  const buf = Buffer.alloc(size);
  let at = 0;
  while (at < size) {
    const { bytesRead } = await handle.read(buf, at, size - at, at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return buf.subarray(0, at).toString("utf8");
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
