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
import * as fs from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import * as path from "node:path";
import type { PermissionMode } from "../protocol/index.js";
import { hiddenError, isConfined, isInside, isReachable, resolveInWorkspace } from "./workspace.js";
import { ToolError } from "./types.js";

export interface OpenedFile {
  handle: FileHandle;
  size: number;
  realPath: string;
}

/** An opened file for writing; `created` when this call made it. */
export interface WritableFile extends OpenedFile {
  created: boolean;
}

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_DIRECTORY } = fsc;
/** `O_PATH` of Linux (x86, arm, and the generic ABI); Node's `fs.constants` lacks it. */
const O_PATH = 0o10000000;
/** Never block on a FIFO, never take a terminal as controlling terminal. */
const SAFE = O_NONBLOCK | O_NOCTTY;
/** Symbolic links followed in one resolution at most, as the kernel does (`ELOOP`). */
const MAX_LINK_HOPS = 40;

let descriptorPaths: boolean | undefined;

/** For tests: `false` forces the checks by name used where `/proc/self/fd` is missing; `undefined` probes again. */
export function useDescriptorPaths(enabled: boolean | undefined): void {
  descriptorPaths = enabled;
}

/** Whether `/proc/self/fd/N` names opened descriptors here (Linux with /proc mounted). */
async function haveDescriptorPaths(): Promise<boolean> {
  if (descriptorPaths === undefined) {
    descriptorPaths = false;
    if (process.platform === "linux") {
      let probe: FileHandle | undefined;
      try {
        probe = await fs.open("/", O_PATH | O_DIRECTORY);
        descriptorPaths = (await fs.readlink(`/proc/self/fd/${probe.fd}`)) === "/";
      } catch {
        descriptorPaths = false;
      } finally {
        await probe?.close().catch(() => undefined);
      }
    }
  }
  return descriptorPaths;
}

const procPath = (h: FileHandle, name?: string) => (name === undefined ? `/proc/self/fd/${h.fd}` : `/proc/self/fd/${h.fd}/${name}`);

/** The real path of what `h` holds, read from the kernel (not from the name it was opened by). */
async function realPathOf(h: FileHandle): Promise<string> {
  return fs.readlink(procPath(h));
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** What to call a non-regular file in an error. */
function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a file";
}

/** The root every confined real path must stay inside, or `undefined` when the mode does not confine. */
async function confinementRoot(workspace: string, mode: PermissionMode): Promise<string | undefined> {
  return isConfined(mode) ? fs.realpath(workspace) : undefined;
}

/** The refusal of `real`, confined to `root`: a hidden path inside it, or a path outside it. */
function outside(requested: string, real: string, workspace: string, mode: PermissionMode, root: string): ToolError {
  if (isInside(root, real)) return hiddenError(requested);
  return new ToolError(
    `path '${requested}' leads outside the workspace (${workspace}) to ${real}; permission mode '${mode}' confines file tools to it`,
  );
}

function openError(requested: string, err: unknown, verb: string): ToolError {
  const code = errno(err);
  if ((code === "ENOENT" || code === "ENOTDIR") && verb === "write") {
    return new ToolError(`cannot write ${requested}: a folder on its path is missing, or went away while it was opened`);
  }
  if (code === "ENOENT" || code === "ENOTDIR") return new ToolError(`no such file: ${requested}`);
  if (code === "ELOOP") return new ToolError(`cannot ${verb} ${requested}: too many levels of symbolic links`);
  if (code === "ENXIO" || code === "EWOULDBLOCK" || code === "EAGAIN") return new ToolError(`${requested} is not a regular file`);
  if (code === "EACCES" || code === "EPERM") return new ToolError(`cannot ${verb} ${requested}: permission denied`);
  // Node's message ends with the path it opened (often /proc/self/fd/N/…): the model knows the path it gave.
  return new ToolError(`cannot ${verb} ${requested}: ${(err as Error).message.replace(/, \w+ '.*'$/s, "")}`);
}

interface Pinned {
  pin: FileHandle;
  realPath: string;
}

/**
 * Checks a pinned (`O_PATH`) descriptor: real path inside `root`, a regular file. Closes it
 * and throws a ToolError otherwise.
 */
async function checkPinned(pin: FileHandle, requested: string, root: string | undefined, workspace: string, mode: PermissionMode): Promise<Pinned> {
  try {
    const realPath = await realPathOf(pin);
    if (root !== undefined && !isReachable(root, realPath)) throw outside(requested, realPath, workspace, mode, root);
    const st = await pin.stat();
    if (st.isDirectory()) throw new ToolError(`${requested} is a directory, not a file`);
    if (!st.isFile()) throw new ToolError(`${requested} is not a regular file (it is ${kindOf(st)})`);
    return { pin, realPath };
  } catch (err) {
    await pin.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Pins the existing regular file at `absolute` (following symbolic links, as the kernel does)
 * and checks it on the descriptor. Linux only.
 */
async function pinExisting(absolute: string, requested: string, root: string | undefined, workspace: string, mode: PermissionMode, verb: string): Promise<Pinned> {
  let pin: FileHandle;
  try {
    pin = await fs.open(absolute, O_PATH);
  } catch (err) {
    throw openError(requested, err, verb);
  }
  return checkPinned(pin, requested, root, workspace, mode);
}

/** Opens the pinned inode itself with `flags`, then lets the pin go. */
async function reopen(p: Pinned, flags: number, requested: string, verb: string): Promise<OpenedFile> {
  try {
    const handle = await fs.open(procPath(p.pin), flags | SAFE);
    const { size } = await handle.stat();
    return { handle, size, realPath: p.realPath };
  } catch (err) {
    throw openError(requested, err, verb);
  } finally {
    await p.pin.close().catch(() => undefined);
  }
}

/**
 * Without descriptor paths: refuse a non-regular file by name, open without blocking, then check
 * the descriptor's type and that the real path now names the same inode and lies inside.
 */
async function openExistingByName(absolute: string, requested: string, root: string | undefined, workspace: string, mode: PermissionMode, flags: number, verb: string): Promise<OpenedFile> {
  let st;
  try {
    st = await fs.stat(absolute);
  } catch (err) {
    throw openError(requested, err, verb);
  }
  if (st.isDirectory()) throw new ToolError(`${requested} is a directory, not a file`);
  if (!st.isFile()) throw new ToolError(`${requested} is not a regular file (it is ${kindOf(st)})`);
  let handle: FileHandle;
  try {
    handle = await fs.open(absolute, flags | SAFE);
  } catch (err) {
    throw openError(requested, err, verb);
  }
  try {
    const held = await handle.stat();
    if (!held.isFile()) throw new ToolError(`${requested} is not a regular file (it is ${kindOf(held)})`);
    const realPath = await fs.realpath(absolute);
    const named = await fs.stat(realPath);
    if (named.ino !== held.ino || named.dev !== held.dev) throw new ToolError(`${requested} changed while it was being opened; try again`);
    if (root !== undefined && !isReachable(root, realPath)) throw outside(requested, realPath, workspace, mode, root);
    return { handle, size: held.size, realPath };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err instanceof ToolError ? err : openError(requested, err, verb);
  }
}

async function openExisting(workspace: string, requested: string, mode: PermissionMode, flags: number, verb: string): Promise<OpenedFile> {
  const absolute = resolveInWorkspace(workspace, requested, mode);
  const root = await confinementRoot(workspace, mode);
  if (!(await haveDescriptorPaths())) return openExistingByName(absolute, requested, root, workspace, mode, flags, verb);
  return reopen(await pinExisting(absolute, requested, root, workspace, mode, verb), flags, requested, verb);
}

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
 * Opens `requested` for writing, creating it and its missing parent folders (write_file); the
 * content is left as it is for `writeAll` to replace. Existing files are checked as
 * `openForRead` checks them; a new one is created with `O_EXCL` and `O_NOFOLLOW` in a parent
 * folder held and verified as a descriptor. The caller closes `handle`.
 */
export async function openForWrite(workspace: string, requested: string, mode: PermissionMode): Promise<WritableFile> {
  return openForWriteAt(workspace, requested, requested, mode, 0);
}

async function openForWriteAt(workspace: string, target: string, requested: string, mode: PermissionMode, hops: number): Promise<WritableFile> {
  let absolute: string;
  try {
    absolute = resolveInWorkspace(workspace, target, mode);
  } catch (err) {
    if (target === requested || !(err instanceof ToolError)) throw err;
    throw new ToolError(`path '${requested}' is a symbolic link to ${target}, outside the workspace (${workspace}); permission mode '${mode}' confines file tools to it`);
  }
  const root = await confinementRoot(workspace, mode);
  const follow = async (link: string) => {
    if (hops >= MAX_LINK_HOPS) throw new ToolError(`cannot write ${requested}: too many levels of symbolic links`);
    return await openForWriteAt(workspace, link, requested, mode, hops + 1);
  };
  if (!(await haveDescriptorPaths())) return await createByName(absolute, requested, root, workspace, mode, follow);
  // Walk from the real workspace root (or `/` when unconfined) down the lexical rest.
  const base = root ?? "/";
  const lexicalRoot = root !== undefined && isInside(path.resolve(workspace), absolute) ? path.resolve(workspace) : base;
  const parts = path.relative(lexicalRoot, absolute).split(path.sep).filter((p) => p !== "");
  const name = parts.pop();
  if (name === undefined) throw new ToolError(`${requested} is a directory; give a file path`);
  const parent = await openFolderChain(base, parts, requested, root, workspace, mode);
  try {
    try {
      const handle = await fs.open(procPath(parent.dir, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | SAFE, 0o666);
      const realPath = await realPathOf(handle);
      if (root !== undefined && !isReachable(root, realPath)) {
        // Cannot happen through a verified parent; if it ever does, nothing is written and the file goes.
        await handle.close();
        await fs.unlink(realPath).catch(() => undefined);
        throw outside(requested, realPath, workspace, mode, root);
      }
      return { handle, size: 0, realPath, created: true };
    } catch (err) {
      if (errno(err) !== "EEXIST") throw err instanceof ToolError ? err : openError(requested, err, "write");
    }
    // Something is there: a file, a folder, a FIFO, or a symbolic link (maybe dangling).
    const at = procPath(parent.dir, name);
    let pin: FileHandle | undefined;
    try {
      pin = await fs.open(at, O_PATH);
    } catch (err) {
      if (errno(err) !== "ENOENT") throw openError(requested, err, "write");
    }
    if (pin === undefined) {
      // A dangling symbolic link (writing through it creates its target, resolved from the
      // link's real folder, as the kernel does), or the entry went away: resolve again.
      const link = await fs.readlink(at).catch(() => undefined);
      return await follow(link === undefined ? target : path.resolve(parent.realPath, link));
    }
    if ((await pin.stat().catch(() => undefined))?.isDirectory()) {
      await pin.close().catch(() => undefined);
      throw new ToolError(`${requested} is a directory; give a file path`);
    }
    const opened = await reopen(await checkPinned(pin, requested, root, workspace, mode), O_WRONLY, requested, "write");
    return { ...opened, created: false };
  } finally {
    await parent.dir.close().catch(() => undefined);
  }
}

/**
 * Opens (creating when missing) each folder of `parts` under `base`, one component at a time,
 * each relative to the descriptor of the one before, each verified inside `root`.
 */
async function openFolderChain(base: string, parts: string[], requested: string, root: string | undefined, workspace: string, mode: PermissionMode): Promise<{ dir: FileHandle; realPath: string }> {
  let dir = await fs.open(base, O_PATH | O_DIRECTORY);
  let realPath = await realPathOf(dir);
  try {
    for (const part of parts) {
      const at = procPath(dir, part);
      let next: FileHandle;
      try {
        next = await fs.open(at, O_PATH | O_DIRECTORY);
      } catch (err) {
        if (errno(err) === "ENOTDIR") throw new ToolError(`cannot write ${requested}: ${path.join(realPath, part)} is not a folder`);
        if (errno(err) !== "ENOENT") throw openError(requested, err, "write");
        try {
          await fs.mkdir(at, 0o777);
        } catch (mkErr) {
          if (errno(mkErr) !== "EEXIST") throw openError(requested, mkErr, "write");
        }
        try {
          // Not following: what was just made (or raced in) must be a real folder.
          next = await fs.open(at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
        } catch (again) {
          const code = errno(again);
          if (code === "ELOOP") throw new ToolError(`cannot write ${requested}: ${path.join(realPath, part)} is a symbolic link to a missing folder`);
          if (code === "ENOTDIR") throw new ToolError(`cannot write ${requested}: ${path.join(realPath, part)} is not a folder`);
          throw openError(requested, again, "write");
        }
      }
      const nextReal = await realPathOf(next).catch(async (err) => {
        await next.close().catch(() => undefined);
        throw err;
      });
      if (root !== undefined && !isReachable(root, nextReal)) {
        await next.close().catch(() => undefined);
        throw outside(requested, nextReal, workspace, mode, root);
      }
      await dir.close().catch(() => undefined);
      dir = next;
      realPath = nextReal;
    }
    return { dir, realPath };
  } catch (err) {
    await dir.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Without descriptor paths: the file opened as `openExistingByName` does, or else its folders
 * made one at a time from the workspace down, each checked by real path (one made outside by a
 * lost race is removed), and the file made `O_EXCL | O_NOFOLLOW` and checked the same way.
 */
async function createByName(
  absolute: string,
  requested: string,
  root: string | undefined,
  workspace: string,
  mode: PermissionMode,
  follow: (target: string) => Promise<WritableFile>,
): Promise<WritableFile> {
  const missing = await fs.stat(absolute).then(
    () => false,
    (err: unknown) => errno(err) === "ENOENT" || errno(err) === "ENOTDIR",
  );
  if (!missing) return { ...(await openExistingByName(absolute, requested, root, workspace, mode, O_WRONLY, "write")), created: false };
  const start = root === undefined ? path.parse(absolute).root : isInside(path.resolve(workspace), absolute) ? path.resolve(workspace) : root;
  let dir = start;
  for (const part of path.relative(start, path.dirname(absolute)).split(path.sep).filter((p) => p !== "")) {
    dir = path.join(dir, part);
    let made = false;
    try {
      await fs.mkdir(dir);
      made = true;
    } catch (err) {
      if (errno(err) !== "EEXIST") throw openError(requested, err, "write");
    }
    if (!made && !(await fs.stat(dir).catch(() => undefined))?.isDirectory()) throw new ToolError(`cannot write ${requested}: ${dir} is not a folder`);
    if (root === undefined) continue;
    const real = await fs.realpath(dir).catch(() => dir);
    if (!isReachable(root, real)) {
      if (made) await fs.rmdir(real).catch(() => undefined);
      throw outside(requested, real, workspace, mode, root);
    }
  }
  let handle: FileHandle;
  try {
    handle = await fs.open(absolute, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | SAFE, 0o666);
  } catch (err) {
    if (errno(err) !== "EEXIST") throw openError(requested, err, "write");
    // A dangling symbolic link (or something that appeared meanwhile): resolve again through it.
    const link = await fs.readlink(absolute).catch(() => undefined);
    const from = await fs.realpath(path.dirname(absolute)).catch(() => path.dirname(absolute));
    return await follow(link === undefined ? absolute : path.resolve(from, link));
  }
  // The file made must be the one the real path names now, inside; else not a byte goes to it.
  const held = await handle.stat();
  const realPath = await fs.realpath(absolute).catch(() => undefined);
  const named = realPath === undefined ? undefined : await fs.stat(realPath).catch(() => undefined);
  if (realPath === undefined || named?.ino !== held.ino || named.dev !== held.dev || (root !== undefined && !isReachable(root, realPath))) {
    await handle.close();
    if (realPath !== undefined && named?.ino === held.ino) await fs.unlink(realPath).catch(() => undefined);
    if (realPath !== undefined && root !== undefined && !isReachable(root, realPath)) throw outside(requested, realPath, workspace, mode, root);
    throw new ToolError(`cannot write ${requested}: its path changed while it was being created; try again`);
  }
  return { handle, size: 0, realPath, created: true };
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
