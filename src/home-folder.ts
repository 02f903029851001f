/**
 * The home folder the bridge names paths in (the credential stores the sandbox hides, its
 * toolchains, the default session root): `HOME` when it is absolute, else the account's.
 * Its own module: the sandbox and the session store's default root both need it, early.
 */
import { homedir, userInfo } from "node:os";
import * as path from "node:path";

/**
 * The last absolute `HOME` resolved, and its normal form. `path.resolve` of one string is always
 * the same path, so each value is resolved once: the start-up path asks for the home folder
 * several times where bubblewrap is off, and every resolve runs node's `normalizeString` over the
 * path character by character, which made it hot enough for V8 to compile it (Maglev) before the
 * `initialize` response (bench/README.md, "Why the code does this").
 */
let resolvedHome: { from: string; home: string } | undefined;

/**
 * `HOME` of `env` when it is absolute, else this process's (`os.homedir()`) when that is, else
 * the account's from its password entry, else `/`; in normal form. `os.homedir()` returns a set
 * `HOME` as it is, empty or relative too: such a home would resolve against the working
 * directory, so the account's own credential stores would not be named (nor hidden), and the
 * session logs would land in the workspace.
 */
export function homeFolder(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME;
  if (home && path.isAbsolute(home)) {
    if (resolvedHome?.from !== home) resolvedHome = { from: home, home: path.resolve(home) };
    return resolvedHome.home;
  }
  const own = homedir();
  if (path.isAbsolute(own)) return path.resolve(own);
  try {
    const account = userInfo().homedir;
    if (path.isAbsolute(account)) return path.resolve(account);
  } catch {
    // no password entry for this uid
  }
  return "/";
}
