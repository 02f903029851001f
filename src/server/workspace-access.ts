/**
 * `initialize`'s check of `cwd` as a folder the bridge can work in: there, a folder, and one this
 * process may read and enter. A checkout owned by another user (a CI runner's, a mounted one, a
 * root-owned folder a service account is pointed at) otherwise answered `-32603` "internal
 * error: EACCES ... stat" for a folder behind one it cannot enter, and an `initialize` that
 * succeeded for a folder it cannot read, whose every tool call then failed. Each is `-32602`
 * naming the folder, the cause and the fix. Writing is not asked: a read-only checkout is a
 * fine workspace for a turn that only reads (the writing tools then say why they cannot).
 */
import { accessSync, constants, statSync, type Stats } from "node:fs";
import { ErrorCode, RpcError } from "../protocol/errors.js";

const invalid = (message: string) => new RpcError(ErrorCode.InvalidParams, `invalid params: params.cwd: ${message}`, { kind: "invalid-params" });

/** Who the bridge runs as, for a message about permissions. */
const who = () => `the bridge runs as uid ${process.getuid?.() ?? "?"}`;

/**
 * Why an errno of a look at the workspace stops it, and the fix, in words. The fix is the
 * cause's: a loop of links, or a file where a folder of the path should be, is not mended by
 * permissions (which the message advised for every cause).
 */
function because(error: unknown, fix: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM") return `permission denied (${who()}); ${fix}`;
  if (code === "ELOOP") return "a loop of symbolic links on its path; the workspace must be a folder: mend the links, or pass the folder's real path as cwd";
  if (code === "ENOTDIR") return "a part of its path is not a folder; the workspace must be an existing folder: pass the folder to work in as cwd";
  return `${(error as Error).message}; the workspace must be an existing folder this user can list and enter`;
}

/** Throws the `-32602` for a `workspace` (absolute, normal form) that no turn could work in. */
export function checkWorkspace(workspace: string): void {
  let found: Stats | undefined;
  try {
    found = statSync(workspace, { throwIfNoEntry: false });
  } catch (error) {
    // A folder on the way that this user may not enter (EACCES), a link loop: not "internal".
    throw invalid(`${workspace} cannot be reached: ${because(error, "the workspace must be a folder this user can enter: change the permissions of the folders on its path, or run the bridge as a user who can")}`);
  }
  if (!found?.isDirectory()) {
    // The cause (missing, or not a folder) and the fix: a new user's first mistake is often a typo.
    const why = found ? "is not a folder" : "does not exist";
    throw invalid(`${workspace} ${why}; the workspace must be an existing folder: create it, or pass the folder to work in as cwd`);
  }
  try {
    accessSync(workspace, constants.R_OK | constants.X_OK);
  } catch (error) {
    throw invalid(`${workspace} cannot be read: ${because(error, "the workspace must be a folder this user can list and enter: change its permissions, or run the bridge as a user who can")}`);
  }
}
