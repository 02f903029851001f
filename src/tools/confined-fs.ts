/**
 * Opening workspace files without races (minimal version for the search tools; the file tools'
 * helper provides the full module with this same interface).
 *
 * A check of the path followed by an open by name loses to a concurrent swap of a folder for a
 * symbolic link. So the file is opened first (`O_NOFOLLOW` for the last component, `O_NONBLOCK`
 * so that a FIFO cannot block the open), and the descriptor itself is checked: it must be a
 * regular file, and in a confining mode its real path (`/proc/self/fd/N`) must be inside the
 * workspace. Only then is a byte read.
 */
import { constants as C } from "node:fs";
import * as fsp from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import * as path from "node:path";
import type { PermissionMode } from "../protocol/index.js";
import { ToolError } from "./types.js";
import { isConfined, resolveInWorkspace } from "./workspace.js";

export interface OpenedFile {
  handle: FileHandle;
  size: number;
  realPath: string;
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Opens an existing regular file for reading, never blocking (FIFO etc. refused), never through a symlink out of the workspace (verified on the descriptor via /proc/self/fd/N) when `mode` confines. Throws ToolError. Caller closes handle. */
export async function openForRead(workspace: string, requested: string, mode: PermissionMode): Promise<OpenedFile> {
  const confined = isConfined(mode);
  // The lexical check gives a clear message; the real check is on the descriptor, below.
  const absolute = path.resolve(workspace, requested);
  if (confined && !isInside(path.resolve(workspace), absolute)) resolveInWorkspace(workspace, requested, mode);
  const realRoot = confined ? fsp.realpath(workspace) : undefined;
  realRoot?.catch(() => undefined);
  let handle: FileHandle;
  try {
    handle = await fsp.open(absolute, C.O_RDONLY | C.O_NONBLOCK | C.O_NOCTTY | (confined ? C.O_NOFOLLOW : 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new ToolError(`no such file: ${requested}`);
    if (code === "ELOOP") throw new ToolError(`${requested} is a symbolic link; permission mode '${mode}' does not follow it`);
    throw new ToolError(`cannot open ${requested}: ${(err as Error).message}`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ToolError(`${requested} is not a regular file`);
    let realPath = absolute;
    try {
      realPath = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      if (confined) throw new ToolError(`cannot verify where ${requested} leads (/proc is not available)`);
    }
    if (confined && !isInside(await realRoot!, realPath)) {
      throw new ToolError(`path '${requested}' leads outside the workspace; permission mode '${mode}' confines file tools to it`);
    }
    return { handle, size: st.size, realPath };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}
