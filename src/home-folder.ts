/**
 * The home folder the bridge names paths in (the credential stores the sandbox hides, its
 * toolchains, the default session root): `HOME` when it is absolute, else the account's.
 * Its own module: the sandbox and the session store's default root both need it, early.
 */
import * as path from "node:path";
import { resolvedPath } from "./normal-path.js";

/**
 * `HOME` of `env` when it is absolute, else this process's (`os.homedir()`) when that is, else
 * the account's from its password entry, else `/` (also when the uid has no password entry);
 * in normal form. `os.homedir()` returns a set
 * `HOME` as it is, empty or relative too: such a home would resolve against the working
 * directory, so the account's own credential stores would not be named (nor hidden), and the
 * session logs would land in the workspace.
 */
export function homeFolder(env: NodeJS.ProcessEnv = process.env): string {
  // Not normalized again when it is in normal form: the start-up path asks for it where bubblewrap is off (normal-path.ts: why).
  if (env.HOME && path.isAbsolute(env.HOME)) return resolvedPath(env.HOME);
  // Both throw (uv_os_homedir ENOENT) for a uid without a password entry and without HOME, as a
  // container run with a bare numeric user: a home that cannot be named is "/", never a crash.
  // node:os only here, off the usual start-up (temp-folder.ts: why).
  const os = process.getBuiltinModule("node:os");
  try {
    const own = os.homedir();
    if (path.isAbsolute(own)) return path.resolve(own);
    const account = os.userInfo().homedir;
    if (path.isAbsolute(account)) return path.resolve(account);
  } catch {
    // no HOME and no password entry for this uid
  }
  return "/";
}
