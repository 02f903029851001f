/**
 * The files a git snapshot covers: what `git ls-files --cached --others --exclude-standard`
 * lists under the workspace (tracked and untracked, ignored files left out), with the blob id
 * the index records for each tracked one (`ls-files --stage`, which reads the index only). Git
 * is asked only to list, and to read objects back raw (git-objects.ts): the bridge reads and
 * hashes the content itself (path-state.ts), so no clean filter, textconv or `process` filter of
 * the repository ever runs, and nothing of the user's repository is written (index, HEAD, refs,
 * stash, objects).
 *
 * Invariant: a hostile repository gets no code run. Git runs with the system and global
 * configuration off (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), every inherited
 * `GIT_*` variable dropped (a client's `GIT_DIR` or `GIT_CONFIG_PARAMETERS` included), and the
 * repository's own settings that run programs overridden on the command line, which wins over
 * every configuration file: `core.fsmonitor=false` (the one `ls-files` would run),
 * `core.hooksPath=/dev/null`, `core.untrackedCache=false`; `GIT_OPTIONAL_LOCKS=0` keeps it from
 * rewriting the index. `ls-files` reads `.gitattributes` never and runs no filter. No transport
 * may run either (`GIT_ALLOW_PROTOCOL` empty: every protocol refused, whatever the repository's
 * `protocol.*.allow`; `GIT_NO_LAZY_FETCH=1` where git knows it): reading an object that is
 * missing from a partial clone would otherwise fetch it from a remote the repository names.
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
    GIT_ALLOW_PROTOCOL: "",
    GIT_NO_LAZY_FETCH: "1",
  };
}

/** Runs git with the neutral config and environment; `input` goes to its stdin. `undefined`: it failed (or exited `okCodes`-less non-zero). */
export function runGit(cwd: string, args: string[], input?: Buffer | string, okCodes: readonly number[] = [0]): Promise<{ code: number; stdout: Buffer } | undefined> {
  return new Promise((resolve) => {
    const child = execFile(
      "git",
      [...GIT_NEUTRAL_CONFIG, ...args],
      { cwd, env: gitEnv(), encoding: "buffer", maxBuffer: 1 << 30, timeout: 120_000, windowsHide: true },
      (error, stdout) => {
        const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : -1) : 0;
        resolve(okCodes.includes(code) ? { code, stdout } : undefined);
      },
    );
    child.stdin?.on("error", () => {});
    child.stdin?.end(input ?? "");
  });
}

async function git(cwd: string, args: string[]): Promise<Buffer | undefined> {
  return (await runGit(cwd, args))?.stdout;
}

/** Whether `workspace` is (inside) a git work tree git will work on; `false` when git is missing, refuses it (`safe.directory`) or it is no repository. */
export async function isGitWorkTree(workspace: string): Promise<boolean> {
  const out = await git(workspace, ["rev-parse", "--is-inside-work-tree"]);
  return out?.toString("utf8").trim() === "true";
}

/** What a listing found: the paths, and the blob id the index records for each tracked path (stage 0 only). */
export interface WorkTreeListing {
  paths: string[];
  index: Map<string, string>;
}

/** `<mode> SP <object> SP <stage> TAB <path>` of `ls-files --stage`. */
const STAGE_LINE = /^[0-7]{6} ([0-9a-f]{40}|[0-9a-f]{64}) ([0-3])\t/;

/**
 * The workspace-relative paths of the files a snapshot covers, or `undefined` when git could
 * not list them (the turn then falls back to a `files` checkpoint). Folders git lists whole
 * (a nested repository) are left out. Two listings, run together: the index (`--stage`: each
 * tracked path with its blob id) and the untracked files that are not ignored.
 */
export async function listWorkTree(workspace: string): Promise<WorkTreeListing | undefined> {
  // Run in the workspace, ls-files names what is under it, relative to it.
  const [cached, others] = await Promise.all([
    git(workspace, ["ls-files", "-z", "--cached", "--stage", "--", "."]),
    git(workspace, ["ls-files", "-z", "--others", "--exclude-standard", "--", "."]),
  ]);
  if (!cached || !others) return undefined;
  const seen = new Set<string>();
  const index = new Map<string, string>();
  const unmerged = new Set<string>();
  for (const line of cached.toString("utf8").split("\0")) {
    const m = STAGE_LINE.exec(line);
    if (!m) continue;
    const entry = line.slice(m[0].length);
    if (entry.length === 0 || entry.endsWith("/")) continue;
    seen.add(entry);
    // An unmerged path (stages 1-3) has no one blob it is.
    if (m[2] === "0") index.set(entry, m[1]);
    else unmerged.add(entry);
  }
  for (const entry of unmerged) index.delete(entry);
  for (const entry of others.toString("utf8").split("\0")) {
    if (entry.length === 0 || entry.endsWith("/")) continue;
    seen.add(entry);
  }
  return { paths: [...seen], index };
}
