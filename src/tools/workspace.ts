/**
 * Workspace confinement for the file tools: every path resolves against the workspace, and in
 * a confined mode nothing outside it is reachable — not through `..`, an absolute path, or a
 * symlink (the real path is checked, also of the nearest existing parent of a new file).
 *
 * This is the check by name, made first for a clear error; it cannot hold against a concurrent
 * swap of a folder for a symbolic link. What makes confinement hold is `confined-fs.ts`, which
 * checks the opened descriptor itself.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { PermissionMode } from "../protocol/index.js";
import { isInside } from "./path-inside.js";
import { isHiddenPath } from "../sandbox/hidden.js";
import { ToolError } from "./types.js";

/** Whether the file tools are held inside the workspace in this mode. */
export function isConfined(mode: PermissionMode): boolean {
  return mode !== "full";
}

/** The refusal of a path in a hidden path (a credential store, the session logs). */
export function hiddenError(requested: string): ToolError {
  return new ToolError(`path '${requested}' is hidden from the tools: it is a credential store or the session logs (docs/tools.md, "hidden paths")`);
}

export { isInside };

/**
 * Whether the file tools may reach the real path `real` when confined to the real workspace
 * `root`: inside it, and not in a path hidden from tools (sandbox/hidden.ts `isHiddenPath`).
 */
export function isReachable(root: string, real: string): boolean {
  return isInside(root, real) && !isHiddenPath(real, root);
}

/**
 * The target of `p` if it is a symbolic link (even a dangling one), else `undefined`. A
 * relative target is resolved from the link's real folder, as the kernel does — not from the
 * lexical parent, which differs when a folder on the way is itself a link (`a/b/c -> ../..`).
 */
function linkTarget(p: string): string | undefined {
  try {
    if (!fs.lstatSync(p).isSymbolicLink()) return undefined;
    return path.resolve(fs.realpathSync(path.dirname(p)), fs.readlinkSync(p));
  } catch {
    return undefined;
  }
}

/**
 * The real path of `p`, or of its nearest existing ancestor joined with the rest. A dangling
 * symbolic link on the way is followed to where it points (writing through it would create its
 * target), so a link to a not-yet-existing file outside the workspace is seen as outside.
 */
function realPathOfNearest(p: string): string {
  let existing = p;
  let rest: string[] = [];
  for (let hops = 0; ; ) {
    try {
      return path.join(fs.realpathSync(existing), ...[...rest].reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
      const target = linkTarget(existing);
      if (target !== undefined) {
        if (++hops > 40) throw new ToolError(`too many levels of symbolic links in ${p}`);
        existing = target;
        continue;
      }
      const parent = path.dirname(existing);
      if (parent === existing) return path.join(existing, ...[...rest].reverse());
      rest = [...rest, path.basename(existing)];
      existing = parent;
    }
  }
}

/**
 * Resolves a tool's `path` argument to an absolute path, refusing (with a `ToolError` the model
 * can read) anything outside the workspace when the mode confines.
 */
export function resolveInWorkspace(workspace: string, requested: string, mode: PermissionMode): string {
  if (typeof requested !== "string" || requested.length === 0) throw new ToolError("path must be a non-empty string");
  const absolute = path.resolve(workspace, requested);
  if (!isConfined(mode)) return absolute;
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(workspace);
  } catch (err) {
    throw new ToolError(`the workspace ${workspace} cannot be resolved: ${(err as Error).message}`);
  }
  if (!isInside(path.resolve(workspace), absolute) && !isInside(realRoot, absolute)) {
    throw new ToolError(`path '${requested}' is outside the workspace (${workspace}); permission mode '${mode}' confines file tools to it`);
  }
  let real: string;
  try {
    real = realPathOfNearest(absolute);
  } catch (err) {
    if (err instanceof ToolError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw new ToolError(`path '${requested}': too many levels of symbolic links`);
    if (code === "EACCES" || code === "EPERM") throw new ToolError(`path '${requested}': permission denied`);
    throw new ToolError(`path '${requested}': ${(err as Error).message.replace(/, \w+ '.*'$/s, "")}`);
  }
  if (isInside(realRoot, real) && isHiddenPath(real, realRoot)) throw hiddenError(requested);
  if (!isInside(realRoot, real)) {
    throw new ToolError(`path '${requested}' leads outside the workspace through a symbolic link (to ${real}); permission mode '${mode}' confines file tools to it`);
  }
  return absolute;
}
