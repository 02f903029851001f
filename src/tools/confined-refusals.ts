/** The errors the confined opens answer with: what the model reads when a path is refused. */
import * as fs from "node:fs/promises";
import type { PermissionMode } from "../protocol/index.js";
import { hiddenError, isConfined, isInside } from "./workspace.js";
import { ToolError } from "./types.js";

export function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** What to call a non-regular file in an error. */
export function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a file";
}

/** The root every confined real path must stay inside, or `undefined` when the mode does not confine. */
export async function confinementRoot(workspace: string, mode: PermissionMode): Promise<string | undefined> {
  return isConfined(mode) ? fs.realpath(workspace) : undefined;
}

/** The refusal of `real`, confined to `root`: a hidden path inside it, or a path outside it. */
export function outside(requested: string, real: string, workspace: string, mode: PermissionMode, root: string): ToolError {
  if (isInside(root, real)) return hiddenError(requested);
  return new ToolError(
    `path '${requested}' leads outside the workspace (${workspace}) to ${real}; permission mode '${mode}' confines file tools to it`,
  );
}

export function openError(requested: string, err: unknown, verb: string): ToolError {
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

