/**
 * The files a git snapshot covers: what `git ls-files --cached --others --exclude-standard`
 * lists under the workspace (tracked and untracked, ignored files left out), with the blob id
 * the index records for each tracked one (`--stage`, which reads the index only). Git
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
 * Invariant: the `git` that runs is never one the workspace provides. Checkpoints run git on
 * their own, at every turn, with no tool call and no approval: were `git` looked up through
 * PATH from the workspace (the child's cwd), a PATH holding `.`, an empty entry (which means
 * `.`), any relative entry, or a folder inside the workspace would run the repository's own
 * `git` script just for opening a session there. So git is resolved here to an absolute path,
 * from PATH's absolute entries whose real path is outside the real workspace (the file's own
 * real path too), and git gets that same filtered PATH; no such git: git is absent (the turn's
 * checkpoint falls back to `files`).
 *
 * @module
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { isInside } from "../../tools/path-inside.js";

/** Overrides on every git command line: settings of the repository that would run a program. */
export const GIT_NEUTRAL_CONFIG: readonly string[] = [
  "-c", "core.fsmonitor=false",
  "-c", "core.hooksPath=/dev/null",
  "-c", "core.untrackedCache=false",
  "-c", "core.attributesFile=/dev/null",
  "-c", "core.splitIndex=false",
  "-c", "gc.auto=0",
];

const realOrUndefined = (p: string): string | undefined => {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
};

/**
 * PATH's entries git may come from, for a command run in `workspace`: absolute, existing, and
 * (real path) outside the real workspace. Relative and empty entries resolve against the cwd —
 * the workspace — and are dropped (see the module's invariant).
 */
export function trustedPath(workspace: string, pathVar: string | undefined = process.env.PATH): string[] {
  const root = realOrUndefined(workspace) ?? path.resolve(workspace);
  const out: string[] = [];
  for (const entry of (pathVar ?? "/usr/bin:/bin").split(path.delimiter)) {
    if (!path.isAbsolute(entry)) continue;
    const real = realOrUndefined(entry);
    if (real === undefined || isInside(root, real) || isInside(root, path.resolve(entry)) || out.includes(entry)) continue;
    out.push(entry);
  }
  return out;
}

/** The absolute path of the git to run in `workspace` (the first on `trustedPath` whose real file is outside it too); `undefined`: none. */
export function findGit(workspace: string, pathVar: string | undefined = process.env.PATH): string | undefined {
  const root = realOrUndefined(workspace) ?? path.resolve(workspace);
  for (const dir of trustedPath(workspace, pathVar)) {
    const candidate = path.join(dir, "git");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      const real = fs.realpathSync.native(candidate);
      if (fs.statSync(real).isFile() && !isInside(root, real)) return candidate;
    } catch {
      // not there, or not an executable file: the next entry
    }
  }
  return undefined;
}

/** The environment git runs in: a trusted PATH and HOME, no inherited `GIT_*`, no system or global config. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env, workspace?: string): NodeJS.ProcessEnv {
  return {
    PATH: workspace === undefined ? (base.PATH ?? "/usr/bin:/bin") : trustedPath(workspace, base.PATH).join(path.delimiter),
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
  const gitPath = findGit(cwd);
  if (gitPath === undefined) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const child = execFile(
      gitPath,
      [...GIT_NEUTRAL_CONFIG, ...args],
      { cwd, env: gitEnv(process.env, cwd), encoding: "buffer", maxBuffer: 1 << 30, timeout: 120_000, windowsHide: true },
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
  /**
   * The paths whose names are not UTF-8, as git printed them (relative bytes). No string
   * names them, so no checkpoint can keep or restore them: the turn only tells whether one
   * changed (turn-recorder.ts).
   */
  unnamed: Buffer[];
}

/** The listing's NUL-separated lines: strings, or the raw bytes of a line that is not UTF-8. */
function listingLines(out: Buffer): Array<string | Buffer> {
  const text = out.toString("utf8");
  if (!text.includes("\uFFFD")) return text.split("\0");
  const lines: Array<string | Buffer> = [];
  for (let start = 0; start <= out.length; ) {
    let end = out.indexOf(0, start);
    if (end === -1) end = out.length;
    const raw = out.subarray(start, end);
    const line = raw.toString("utf8");
    lines.push(Buffer.from(line, "utf8").equals(raw) ? line : Buffer.from(raw));
    start = end + 1;
  }
  return lines;
}

/**
 * The workspace-relative paths of the files a snapshot covers, or `undefined` when git could
 * not list them (the turn then falls back to a `files` checkpoint). Folders git lists whole
 * (a nested repository) are left out. One listing: `-t` tags each line, so an untracked
 * path (`? <path>`) is never taken for an index entry (`H <mode> <object> <stage>\t<path>`,
 * `S` for skip-worktree, `M` unmerged), whatever its name. `stage: false` (the look at a
 * turn's end, which needs no blob ids): `<tag> <path>` lines, the index left empty.
 */
export async function listWorkTree(workspace: string, stage = true): Promise<WorkTreeListing | undefined> {
  // Run in the workspace, ls-files names what is under it, relative to it.
  const out = await git(workspace, ["ls-files", "-z", "-t", ...(stage ? ["--stage"] : []), "--cached", "--others", "--exclude-standard", "--", "."]);
  if (!out) return undefined;
  const seen = new Set<string>();
  const index = new Map<string, string>();
  const unmerged = new Set<string>();
  const unnamed: Buffer[] = [];
  for (const line of listingLines(out)) {
    if (typeof line !== "string") {
      // The head ("? ", or "<tag> <mode> <object> <stage>\t") is ASCII: the name is what follows it.
      const name = line.subarray(line[0] === 0x3f || !stage ? 2 : line.indexOf(9) + 1);
      if (name.length > 0 && name[name.length - 1] !== 0x2f) unnamed.push(name);
      continue;
    }
    let entry: string;
    if (line.startsWith("? ") || !stage) entry = line.slice(2);
    else {
      // "<tag> <mode> <object> <stage>\t<path>": the fixed-width head, checked without a regex (10 000 lines a walk).
      const tab = line.indexOf("\t");
      const idLength = tab - 11;
      if ((idLength !== 40 && idLength !== 64) || line.charCodeAt(1) !== 32 || line.charCodeAt(8) !== 32 || line.charCodeAt(tab - 2) !== 32) continue;
      const id = line.slice(9, tab - 2);
      entry = line.slice(tab + 1);
      // An unmerged path (stages 1-3) has no one blob it is; the id is checked (GIT_ID) before git is ever given it.
      if (line.charCodeAt(tab - 1) === 48) index.set(entry, id);
      else unmerged.add(entry);
    }
    if (entry.length === 0 || entry.endsWith("/")) continue;
    seen.add(entry);
  }
  for (const entry of unmerged) index.delete(entry);
  return { paths: [...seen], index, unnamed };
}
