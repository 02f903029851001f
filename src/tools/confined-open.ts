/**
 * Opening an existing regular file, confined (see confined-fs.ts for the invariant): pinned with
 * `O_PATH`, checked on the descriptor, then reopened through `/proc/self/fd/N`; or, without
 * descriptor paths, checked by name around the open.
 */
import * as fs from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import type { PermissionMode } from "../protocol/index.js";
import { isReachable, resolveInWorkspace } from "./workspace.js";
import { ToolError } from "./types.js";
import { O_PATH, SAFE, haveDescriptorPaths, procPath, realPathOf } from "./descriptor-paths.js";
import { confinementRoot, kindOf, openError, outside } from "./confined-refusals.js";
import { fsPath, nameOf } from "./raw-names.js";

export interface OpenedFile {
  handle: FileHandle;
  size: number;
  realPath: string;
}

export interface Pinned {
  pin: FileHandle;
  realPath: string;
}

/**
 * Checks a pinned (`O_PATH`) descriptor: real path inside `root`, a regular file. Closes it
 * and throws a ToolError otherwise.
 */
export async function checkPinned(pin: FileHandle, requested: string, root: string | undefined, workspace: string, mode: PermissionMode): Promise<Pinned> {
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
    pin = await fs.open(fsPath(absolute), O_PATH);
  } catch (err) {
    throw openError(requested, err, verb);
  }
  return checkPinned(pin, requested, root, workspace, mode);
}

/** Opens the pinned inode itself with `flags`, then lets the pin go. */
export async function reopen(p: Pinned, flags: number, requested: string, verb: string): Promise<OpenedFile> {
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
export async function openExistingByName(absolute: string, requested: string, root: string | undefined, workspace: string, mode: PermissionMode, flags: number, verb: string): Promise<OpenedFile> {
  let st;
  try {
    st = await fs.stat(fsPath(absolute));
  } catch (err) {
    throw openError(requested, err, verb);
  }
  if (st.isDirectory()) throw new ToolError(`${requested} is a directory, not a file`);
  if (!st.isFile()) throw new ToolError(`${requested} is not a regular file (it is ${kindOf(st)})`);
  let handle: FileHandle;
  try {
    handle = await fs.open(fsPath(absolute), flags | SAFE);
  } catch (err) {
    throw openError(requested, err, verb);
  }
  try {
    const held = await handle.stat();
    if (!held.isFile()) throw new ToolError(`${requested} is not a regular file (it is ${kindOf(held)})`);
    const realPath = nameOf(await fs.realpath(fsPath(absolute), "buffer"));
    const named = await fs.stat(fsPath(realPath));
    if (named.ino !== held.ino || named.dev !== held.dev) throw new ToolError(`${requested} changed while it was being opened; try again`);
    if (root !== undefined && !isReachable(root, realPath)) throw outside(requested, realPath, workspace, mode, root);
    return { handle, size: held.size, realPath };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err instanceof ToolError ? err : openError(requested, err, verb);
  }
}

export async function openExisting(workspace: string, requested: string, mode: PermissionMode, flags: number, verb: string): Promise<OpenedFile> {
  const absolute = resolveInWorkspace(workspace, requested, mode);
  const root = await confinementRoot(workspace, mode);
  if (!(await haveDescriptorPaths())) return openExistingByName(absolute, requested, root, workspace, mode, flags, verb);
  return reopen(await pinExisting(absolute, requested, root, workspace, mode, verb), flags, requested, verb);
}

