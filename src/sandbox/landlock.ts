/**
 * The Landlock confinement of `bash` in `workspace-write` mode: used where bubblewrap is
 * missing or cannot make its sandbox (probe.ts chooses). Needs no privilege and no user
 * namespace: a kernel with Landlock (Linux 5.13+) and the helper (helper/landlock-exec.c,
 * embedded in the single executable, sha256-checked before every exec: landlock-helper.ts).
 *
 * Invariant: a command here reads only what `landlockRules` allows — the system folders, the
 * workspace, the home toolchains that exist and the Python environments on `PATH` (never a
 * credential store or the session root), `HARNESS_SANDBOX_READ` — and writes only the workspace, its private temporary folder
 * (`TMPDIR`) and /dev/null-like devices; it holds no capability, cannot mount, unshare,
 * ptrace, read the bridge's /proc/PID/environ or memory, nor leave the process group (so it
 * dies with the bridge, and PR_SET_PDEATHSIG kills the helper's process if the bridge dies
 * first). Landlock allows folders, it cannot cut a hole in one: a hidden path (hidden.ts)
 * inside an allowed folder makes this confinement refuse the workspace rather than show it.
 * The network is not restricted (as with bubblewrap).
 */
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import * as path from "node:path";
import { isInside } from "../tools/path-inside.js";
import { homeFolder } from "../home-folder.js";
import { hiddenRealPaths, isBridgeFolder, underHome } from "./hidden.js";
import { privateFolder, verifiedHelper } from "./landlock-helper.js";
import { BRIDGE_FOLDER_FAILURE } from "./status.js";

/** System folders readable (and executable) by a confined command, where they exist. */
export const LANDLOCK_SYSTEM_READ: readonly string[] = [
  "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys", "/nix/store", "/snap",
];
/** Devices a confined command may read and write (files only; no folder of /dev). */
export const LANDLOCK_DEVICES: readonly string[] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];
/**
 * Toolchains in the home folder, readable where they exist (relative to $HOME): compilers,
 * version managers and package caches a coding agent runs builds with. None holds credentials
 * (`~/.cargo/credentials.toml` is why `.cargo` itself is not listed); one that holds or lies in
 * a hidden path is left out. `HARNESS_SANDBOX_READ` adds more.
 */
export const LANDLOCK_HOME_TOOLCHAINS: readonly string[] = [
  ".cargo/bin", ".cargo/registry", ".cargo/git", ".rustup", ".nvm", ".volta", ".fnm", ".bun/bin", ".deno/bin",
  ".pyenv", ".rbenv", ".asdf", ".sdkman", ".local/bin", ".local/lib", ".local/share/uv/python", "go/bin", "go/pkg/mod",
  ".m2/repository", ".gradle/wrapper", ".ghcup/bin", ".elan",
];

/** Whether Landlock is switched off (`HARNESS_LANDLOCK=off`: the tests' way to reach the fail-closed path). */
export function landlockOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.HARNESS_LANDLOCK === "off";
}

const exists = (p: string) => existsSync(p);
// On the path of the start-up probe (bench/README.md, "Why the code does this"): most of the
// folders asked about do not exist, and `existsSync` says so without building an exception;
// the native realpath is one system call where the JavaScript one walks every component.
const real = (p: string) => {
  if (!existsSync(p)) return undefined;
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
};

/**
 * The Python virtual environments on the commands' `PATH` (`<venv>/bin` beside a
 * `<venv>/pyvenv.cfg`) and `VIRTUAL_ENV`'s, outside the system folders. Their `bin` is where a
 * command's `python3` or `pip` is found (the SDK's own environment, activated), and Python
 * reads `pyvenv.cfg` and the environment's `lib` at every start: unreadable, it dies before any
 * user code ("Failed to import the site module"). An environment holds programs and packages,
 * like the home toolchains, and the same rule leaves out one that holds or lies in a hidden path.
 */
function pythonEnvironments(env: NodeJS.ProcessEnv): string[] {
  const candidates = (env.PATH ?? "").split(path.delimiter).filter((dir) => path.isAbsolute(dir) && path.basename(dir) === "bin").map((dir) => path.dirname(dir));
  if (env.VIRTUAL_ENV && path.isAbsolute(env.VIRTUAL_ENV)) candidates.push(env.VIRTUAL_ENV);
  // The pyvenv.cfg that counts is the one where the folder really is: a name swapped for a link
  // between the first look and the resolution cannot lend its pyvenv.cfg to the link's target.
  // The first look, by name, keeps the usual PATH (no environment on it) at one check per entry
  // on the start-up path.
  const found: string[] = [];
  for (const dir of candidates) {
    if (LANDLOCK_SYSTEM_READ.some((d) => isInside(d, dir)) || !exists(path.join(dir, "pyvenv.cfg"))) continue;
    const realDir = real(dir);
    if (realDir && exists(path.join(realDir, "pyvenv.cfg"))) found.push(realDir);
  }
  return found;
}

/** What a command's rules are made of besides its workspace and TMPDIR, as the folders are now. */
export interface RuleParts {
  /** The hidden paths that exist (real paths). */
  hidden: string[];
  /** The folders to read (real paths): the system's, resolv.conf's target, the home toolchains, the Python environments on PATH, HARNESS_SANDBOX_READ. */
  read: string[];
}

/** The rule parts for `env` now (what a command may read: the module comment's invariant). */
export function ruleParts(env: NodeJS.ProcessEnv = process.env): RuleParts {
  const hidden = hiddenRealPaths(env);
  const touchesHidden = (dir: string) => hidden.some((h) => isInside(dir, h) || isInside(h, dir));
  const home = homeFolder(env);

  const read = new Set<string>(LANDLOCK_SYSTEM_READ.filter(exists));
  // /etc/resolv.conf is often a link into /run (systemd-resolved): its target, alone, for DNS.
  // Without one its own name is checked, inside /etc: nothing is added, by the same code, so
  // what the start-up run compiles does not depend on the build machine (scripts/start-up-cache.cjs).
  const resolv = real("/etc/resolv.conf") ?? "/etc/resolv.conf";
  if (!LANDLOCK_SYSTEM_READ.some((d) => isInside(d, resolv))) read.add(resolv);
  for (const rel of LANDLOCK_HOME_TOOLCHAINS) {
    const dir = real(underHome(home, rel));
    if (dir && !touchesHidden(dir)) read.add(dir);
  }
  for (const dir of pythonEnvironments(env)) if (!touchesHidden(dir)) read.add(dir);
  for (const p of (env.HARNESS_SANDBOX_READ ?? "").split(":").filter((p) => path.isAbsolute(p))) {
    const dir = real(p);
    if (dir) read.add(dir);
  }
  return { hidden, read: [...read] };
}

/**
 * Why Landlock cannot confine a command in `workspace` (a real path) that also writes `write`,
 * on the rule parts `parts`; undefined when it can. A hidden path inside anything allowed would
 * be readable: refused instead (bubblewrap can hide it). The workspace itself does not count (as
 * with bubblewrap); a hidden path that holds the workspace does: bubblewrap empties it around
 * the workspace, but a rule that holds it (a folder read) would show all of it.
 */
export function landlockRefusal(workspace: string, write: readonly string[], { hidden, read }: RuleParts): string | undefined {
  for (const dir of [...read, ...write]) {
    const h = hidden.find((h) => isInside(dir, h) && h !== workspace);
    if (!h) continue;
    // The session root, to be made or made: moving it is the fix, not another sandbox (status.ts).
    if (dir === workspace && isBridgeFolder(h)) return `the workspace holds ${h}, which Landlock cannot hide (it allows folders, not holes in them): it is ${BRIDGE_FOLDER_FAILURE}`;
    return dir === workspace
      ? `the workspace holds ${h}, which Landlock cannot hide (it allows folders, not holes in them)`
      : `Landlock cannot hide ${h} inside the readable ${dir} (it allows folders, not holes in them)`;
  }
  return undefined;
}

/**
 * The helper's rule arguments for a command in `workspace` (a real path) with the private
 * temporary folder `tmp`, or why this workspace cannot be confined by Landlock
 * (`landlockRefusal`); on `parts`, by default computed now (a command's always are). Without a
 * workspace (the start-up probe, which asks only whether the helper confines here) nothing is
 * refused: the refusals are a workspace's, checked when it is known.
 */
export function landlockRules(
  workspace: string | undefined,
  tmp: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  parts: RuleParts = ruleParts(env),
): { args: string[] } | { refused: string } {
  const write = [...(workspace ? [workspace] : []), ...(tmp ? [tmp] : [])];
  const refused = workspace ? landlockRefusal(workspace, write, parts) : undefined;
  if (refused) return { refused };
  // The helper opens each rule's path after this look, following links. A folder to read inside
  // one to write (a project's activated `.venv`) is the command's to replace by a link to
  // anywhere before that open: it gets no rule of its own, the write rule already allows it.
  const read = parts.read.filter((p) => !write.some((w) => isInside(w, p)));
  return {
    args: [
      ...read.flatMap((p) => ["--ro", p]),
      ...LANDLOCK_DEVICES.filter(exists).flatMap((p) => ["--rw", p]),
      ...write.flatMap((p) => ["--rw", p]),
    ],
  };
}

/** The argv prefix that runs a program confined (`... -- PROGRAM ARGS`), the helper verified just now; throws with the reason it cannot. */
export function landlockCommand(workspace: string | undefined, tmp: string | undefined, env: NodeJS.ProcessEnv = process.env, extra: string[] = []): string[] {
  // The helper first: where it goes may be a folder to hide (landlock-helper.ts `helperFolder`), which the rules must know.
  const helper = verifiedHelper();
  const rules = landlockRules(workspace, tmp, env);
  if ("refused" in rules) throw new Error(rules.refused);
  return [helper, "--parent-pid", String(process.pid), ...extra, ...rules.args, "--"];
}

/** How a command's temporary folder's name in the private folder begins (verdict-cache.ts `pruneVerdicts` removes one a killed bridge left). */
export const COMMAND_TMP_PREFIX = "tmp-";

/** A fresh private temporary folder for one command (the caller removes it). */
export function makeCommandTmp(): string {
  return mkdtempSync(path.join(privateFolder(), COMMAND_TMP_PREFIX));
}

const TRUE = existsSync("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";

/**
 * What the probe found: the kernel's ABI, or why the confinement does not run — `byHelper` when
 * the helper itself refused (a property of the kernel, the rules and the process's context,
 * which verdict-cache.ts may remember), not when it could not start or died.
 */
export type LandlockProbe = { abi: number } | { failure: string; byHelper?: true };

/**
 * Starts the confinement with `true` in it: its Landlock ABI, or why it does not work here. With
 * a `workspace`, that workspace's confinement (its refusals, its rule); without one, the
 * process's rules alone: whether the helper runs and the kernel confines it.
 */
export async function probeLandlock(workspace: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<LandlockProbe> {
  if (landlockOff(env)) return { failure: "Landlock is switched off (HARNESS_LANDLOCK=off)" };
  if (process.platform !== "linux") return { failure: `Landlock is Linux's (this is ${process.platform})` };
  let argv: string[];
  try {
    argv = landlockCommand(workspace, undefined, env, ["--print-abi"]);
  } catch (error) {
    return { failure: (error as Error).message };
  }
  // Loaded here, not at the top: the bridge's start-up does not need it when bubblewrap is there.
  // spawn with only stderr piped (what the helper says): one pipe less to set up than execFile's,
  // on the start-up path where bwrap is absent (bench/README.md, "Why the code does this").
  const { spawn } = process.getBuiltinModule("node:child_process");
  return new Promise((resolve) => {
    const failed = (how: string, stderr: string) => {
      const first = stderr.trim().split("\n")[0].replace(/[^\x20-\x7e]+/g, "?");
      resolve({ failure: `its helper did not run (${how}${first ? `: ${first.slice(0, 300)}` : ""})` });
    };
    const child = spawn(argv[0], [...argv.slice(1), TRUE], { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });
    let stderr = "";
    // No stderr when the spawn failed for want of descriptors (EMFILE): the "error" below says so.
    child.stderr?.setEncoding("utf8").on("data", (text: string) => {
      if (stderr.length < 65_536) stderr += text;
    });
    // It could not start (an emulator, a noexec folder): no exit to wait for.
    child.on("error", (error: NodeJS.ErrnoException) => failed(`could not start it: ${error.code ?? error.message}`, stderr));
    child.on("close", (code, signal) => {
      const abi = /^landlock-abi (\d+)$/m.exec(stderr);
      if (code === 0 && abi) return resolve({ abi: Number(abi[1]) });
      const said = stderr.split("\n").find((line) => line.startsWith("landlock-exec: "));
      if (said) return resolve({ failure: said.slice("landlock-exec: ".length), byHelper: true });
      // Not the helper's own refusal: it died, or ran without confining.
      failed(code === 0 ? "it reported no ABI" : signal ? `it was killed by ${signal}` : `it exited with ${code}`, stderr);
    });
  });
}
