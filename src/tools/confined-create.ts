/**
 * Opening a file for writing, creating it and its missing folders, confined (see confined-fs.ts
 * for the invariant): every folder held as a descriptor and verified before the next step is
 * taken inside it, the file made `O_EXCL | O_NOFOLLOW`.
 */
import { constants as fsc } from "node:fs";
import * as fs from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import * as path from "node:path";
import type { PermissionMode } from "../protocol/index.js";
import { isInside, isReachable, resolveInWorkspace } from "./workspace.js";
import { ToolError } from "./types.js";
import { MAX_LINK_HOPS, O_PATH, SAFE, haveDescriptorPaths, procPath, realPathOf } from "./descriptor-paths.js";
import { confinementRoot, errno, openError, outside } from "./confined-refusals.js";
import { checkPinned, openExistingByName, reopen, type OpenedFile } from "./confined-open.js";

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY } = fsc;

/** An opened file for writing; `created` when this call made it. */
export interface WritableFile extends OpenedFile {
  created: boolean;
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

