/**
 * A path the model gives that can only be a name which is not valid UTF-8 on disk. The model
 * reads such a name as its decoded text, U+FFFD in place of the bad bytes (from `bash` output,
 * say), and gives that back: a name that does not exist, or, for `write_file`, a second file
 * beside the one it meant. So a path holding U+FFFD that does not exist as given is compared
 * with the folder's names as bytes, and when one decodes to it the call fails naming that
 * file in bash's quoting (raw-names.ts `quotedName`): no file tool can name it (a tool's path is
 * a JSON string, which holds no bytes), bash can.
 *
 * A path holding a lone surrogate (JSON can carry one: `"\udce9"`) is refused outright: it
 * is no name of UTF-8, and the search walks' own form of such names (raw-names.ts) must not
 * become a way to address files that no one documents or tests.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { PermissionMode } from "../protocol/index.js";
import { nameOf, quotedName } from "./raw-names.js";
import { ToolError } from "./types.js";
import { resolveInWorkspace } from "./workspace.js";

/** What the call would do with the file, for the message. */
export type NameUse = "read" | "edit" | "write" | "search";

/**
 * Throws a ToolError when `requested` holds a lone surrogate, or names, through U+FFFD, a file
 * or folder whose name on disk is not valid UTF-8 (and nothing exists under the name as given).
 * Costs nothing for a path without U+FFFD; confined like every tool path (`resolveInWorkspace`
 * first: no folder outside is read).
 */
export async function checkNameOnDisk(workspace: string, requested: string, mode: PermissionMode, use: NameUse): Promise<void> {
  if (!requested.isWellFormed()) {
    throw new ToolError(`path ${JSON.stringify(requested)} is not well-formed Unicode (it holds a lone surrogate); give the path as text`);
  }
  if (!requested.includes("\uFFFD")) return;
  const absolute = resolveInWorkspace(workspace, requested, mode);
  const twins = await undecodableTwins(absolute);
  if (twins.length === 0) return;
  const base = path.resolve(workspace);
  const shown = twins.map((t) => quotedName(path.relative(base, t) || t)).join(", ");
  const what = twins.length === 1 ? `the name on disk is ${shown}` : `the names on disk are ${shown}`;
  const why =
    `U+FFFD (\uFFFD) stands for bytes that are not valid UTF-8, and ${what}, which no file tool can name ` +
    `(bash can, quoted as shown, e.g. to rename it: mv ${twins.length === 1 ? shown : "$'…'"} new-name)`;
  if (use === "write") throw new ToolError(`refusing to write ${requested}: it would be a second file beside the one meant; ${why}`);
  throw new ToolError(`no such file${use === "search" ? " or folder" : ""}: ${requested}; ${why}`);
}

/**
 * The paths (in raw-names.ts's form) that `absolute` decodes from: at the first of its names
 * that does not exist as given, the names of that folder that are not valid UTF-8 and decode to
 * it, each with the rest of the path after it. None when every
 * name exists, or the first missing one holds no U+FFFD.
 */
async function undecodableTwins(absolute: string): Promise<string[]> {
  const parts = absolute.split(path.sep).filter((p) => p !== "");
  let at: string = path.sep;
  for (let i = 0; i < parts.length; i++) {
    const next = path.join(at, parts[i]);
    if (await exists(next)) {
      at = next;
      continue;
    }
    if (!parts[i].includes("\uFFFD")) return [];
    const names = await fs.readdir(at, { encoding: "buffer" }).catch(() => [] as Buffer[]);
    const rest = parts.slice(i + 1);
    const twins = names.filter((n) => n.toString("utf8") === parts[i]).map((n) => path.join(at, nameOf(n)));
    const found = twins.filter((t) => !t.isWellFormed()).map((t) => path.join(t, ...rest));
    return found.slice(0, 5);
  }
  return [];
}

async function exists(p: string): Promise<boolean> {
  return fs.lstat(p).then(
    () => true,
    () => false,
  );
}
