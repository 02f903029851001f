/**
 * The files a git snapshot covers: what `git ls-files --cached --others --exclude-standard`
 * lists under the workspace (tracked and untracked, ignored files left out). Git is asked only
 * to list: the bridge reads and hashes the content itself (path-state.ts), so no clean filter,
 * textconv or `process` filter of the repository ever runs, and nothing of the user's
 * repository is written (index, HEAD, refs, stash, objects).
 *
 * Invariant: a hostile repository gets no code run. Git runs with the system and global
 * configuration off (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), every inherited
 * `GIT_*` variable dropped (a client's `GIT_DIR` or `GIT_CONFIG_PARAMETERS` included), and the
 * repository's own settings that run programs overridden on the command line, which wins over
 * every configuration file: `core.fsmonitor=false` (the one `ls-files` would run),
 * `core.hooksPath=/dev/null`, `core.untrackedCache=false`; `GIT_OPTIONAL_LOCKS=0` keeps it from
 * rewriting the index. `ls-files` reads `.gitattributes` never and runs no filter.
 *
 * @module
 */
import { execFile } from "node:child_process";

/** Overrides on every git command line: settings of the repository that would run a program. */
export const GIT_NEUTRAL_CONFIG: readonly string[] = [
  "-c", "core.fsmonitor=false",
  "-c", "core.hooksPath=/dev/null",
  "-c", "core.untrackedCache=false",
  "-c", "core.attributesFile=/dev/null",
  "-c", "core.splitIndex=false",
  "-c", "gc.auto=0",
];

/** The environment git runs in: PATH and HOME, no inherited `GIT_*`, no system or global config. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    PATH: base.PATH ?? "/usr/bin:/bin",
    ...(base.HOME ? { HOME: base.HOME } : {}),
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_TERMINAL_PROMPT: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
  };
}

function git(cwd: string, args: string[]): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    execFile(
      "git",
      [...GIT_NEUTRAL_CONFIG, ...args],
      { cwd, env: gitEnv(), encoding: "buffer", maxBuffer: 1 << 30, timeout: 120_000, windowsHide: true },
      (error, stdout) => resolve(error ? undefined : stdout),
    );
  });
}

/** Whether `workspace` is (inside) a git work tree git will work on; `false` when git is missing, refuses it (`safe.directory`) or it is no repository. */
export async function isGitWorkTree(workspace: string): Promise<boolean> {
  const out = await git(workspace, ["rev-parse", "--is-inside-work-tree"]);
  return out?.toString("utf8").trim() === "true";
}

/**
 * The workspace-relative paths of the files a snapshot covers, or `undefined` when git could
 * not list them (the turn then falls back to a `files` checkpoint). Folders git lists whole
 * (a nested repository) are left out.
 */
export async function listWorkTree(workspace: string): Promise<string[] | undefined> {
  // Run in the workspace, ls-files names what is under it, relative to it.
  const out = await git(workspace, ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."]);
  if (!out) return undefined;
  const seen = new Set<string>();
  for (const entry of out.toString("utf8").split("\0")) {
    if (entry.length === 0 || entry.endsWith("/")) continue;
    seen.add(entry);
  }
  return [...seen];
}
