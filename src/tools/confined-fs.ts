/**
 * The one place that opens workspace files for the file tools (read_file, write_file,
 * edit_file, and grep's and glob's walks).
 *
 * Invariant, in a confined mode: no byte is read from or written to a file whose real path is
 * outside the workspace, whatever the model (or a process it started) does to the workspace
 * concurrently. A check by name followed by an open by name loses to a swap of a folder for a
 * symbolic link in between, so the check is made on the opened descriptor instead:
 *
 * - An existing file is first pinned with `O_PATH` (Linux): that opens nothing (a FIFO does not
 *   block, a device sees no open), but holds the inode. Its type is read with `fstat` and its
 *   real path with `readlink /proc/self/fd/N`; only when both pass is it reopened for reading or
 *   writing through `/proc/self/fd/N`, which names that very inode, not a path.
 * - A new file is created in a parent folder held as a descriptor: every folder from the
 *   workspace root down is opened one component at a time (created if missing), its real path
 *   verified on the descriptor, and the next step taken relative to it through
 *   `/proc/self/fd/N/<name>` (the `openat`/`mkdirat` Node does not offer). The file itself is
 *   created with `O_CREAT | O_EXCL | O_NOFOLLOW`, so a symbolic link planted under its name is
 *   never written through; its descriptor is verified before a byte is written and, should it
 *   be outside anyway, it is removed.
 *
 * Elsewhere than Linux (or without /proc) the same checks are made by name around the open
 * (`O_NONBLOCK`, `fstat`, the real path's inode compared with the descriptor's): a swap in the
 * instant between the two can still win. Linux is the platform the bridge ships for.
 */
import { constants as fsc } from "node:fs";
import type { PermissionMode } from "../protocol/index.js";
import { ToolError } from "./types.js";
import { openExisting, type OpenedFile } from "./confined-open.js";

export type { OpenedFile } from "./confined-open.js";
export { openForWrite, type WritableFile } from "./confined-create.js";
export { useDescriptorPaths } from "./descriptor-paths.js";

const { O_RDONLY, O_RDWR } = fsc;

/**
 * Opens an existing regular file for reading, never blocking (FIFO, socket, device refused
 * before any blocking open), never through a symlink out of the workspace (verified on the
 * opened descriptor, /proc/self/fd/N), when `mode` confines. Throws ToolError with a message
 * the model can read (no such file / not a regular file / outside the workspace / directory).
 * The caller closes `handle`.
 */
export function openForRead(workspace: string, requested: string, mode: PermissionMode): Promise<OpenedFile> {
  return openExisting(workspace, requested, mode, O_RDONLY, "read");
}

/** Like `openForRead`, for reading and writing in place (edit_file). The caller closes `handle`. */
export function openForUpdate(workspace: string, requested: string, mode: PermissionMode): Promise<OpenedFile> {
  return openExisting(workspace, requested, mode, O_RDWR, "edit");
}

/**
 * Reads an opened file whole, at most `maxBytes` (a file that grew past it after the size check
 * is refused, not read on), checking `signal` between chunks.
 */
export async function readAll(file: OpenedFile, maxBytes: number, requested: string, signal?: AbortSignal): Promise<Buffer> {
  let buf = Buffer.allocUnsafe(Math.min(file.size, maxBytes) + 1);
  let length = 0;
  for (;;) {
    signal?.throwIfAborted();
    if (length === buf.length) {
      if (buf.length > maxBytes) throw new ToolError(`${requested} grew past the ${maxBytes}-byte limit while it was read`);
      const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, maxBytes + 1));
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const { bytesRead } = await file.handle.read(buf, length, buf.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  if (length > maxBytes) throw new ToolError(`${requested} grew past the ${maxBytes}-byte limit while it was read`);
  return buf.subarray(0, length);
}

/** Replaces an opened file's whole content with `bytes` (positional writes, then the length cut). */
export async function writeAll(file: OpenedFile, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    signal?.throwIfAborted();
    const { bytesWritten } = await file.handle.write(bytes, written, Math.min(bytes.length - written, 1 << 20), written);
    written += bytesWritten;
  }
  await file.handle.truncate(bytes.length);
}
