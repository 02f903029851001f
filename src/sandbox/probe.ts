/**
 * Choosing what confines bash in `workspace-write`: bubblewrap when its start-up probe works
 * (one bwrap start per workspace), else the Landlock confinement when its probe works (one
 * start of the helper), else nothing — and then bash refuses (bash.ts), naming both fixes.
 * bubblewrap comes first because it gives more: a PID namespace, hidden paths inside readable
 * folders (docs/tools.md has the table). The bash tool awaits the choice before its first
 * command; the server starts it right after the `initialize` response, so it is ready by then.
 */
import { existsSync, realpathSync } from "node:fs";
import { tempFolder } from "../temp-folder.js";
import { bwrapArgs, bwrapNotFound, findBwrap } from "./bwrap.js";
import { landlockOff, landlockRefusal, landlockRules, probeLandlock, ruleParts, type LandlockProbe, type RuleParts } from "./landlock.js";
import { helperIdentity, privateFolder } from "./landlock-helper.js";
import { wantedHiddenKey } from "./hidden.js";
import { failedForWantOfDescriptors, sandboxStatusAtStart, type SandboxStatus } from "./status.js";
import { forgetVerdict, pruneVerdicts, recalledVerdict, rememberVerdict, verdictKey, type Verdict } from "./verdict-cache.js";

/** What confines bash for a workspace. */
export type Confinement = { kind: "bubblewrap"; bwrap: string } | { kind: "landlock"; abi: number } | { kind: "none"; reason: string };

/** What the probe runs in the sandbox: `true` (half the time of a bash start). */
const TRUE = existsSync("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";

const probes = new Map<string, Promise<unknown>>();
/**
 * A probe's answer, kept for the process: what the machine allows does not change while it
 * runs. Except an answer given for want of file descriptors (EMFILE, ENFILE): it says nothing
 * of the machine, only of that moment, so it is forgotten and the next call probes again.
 */
function once<T>(key: string, probe: () => Promise<T>): Promise<T> {
  let p = probes.get(key) as Promise<T> | undefined;
  if (!p) {
    const made = probe();
    probes.set(key, (p = made));
    void made.then((answer) => {
      if (outOfDescriptors(answer) && probes.get(key) === made) probes.delete(key);
    });
  }
  return p;
}

/** Whether a probe's answer (a bubblewrap failure, a Landlock probe) is a spawn that lacked descriptors. */
function outOfDescriptors(answer: unknown): boolean {
  const failure = typeof answer === "string" ? answer : (answer as { failure?: unknown } | null)?.failure;
  return typeof failure === "string" && failedForWantOfDescriptors(failure);
}

/** null when bubblewrap makes its sandbox for `workspace` here, else why not (probed once per workspace and bwrap). */
export function probeBubblewrap(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const bwrap = findBwrap(env);
  if (!bwrap) return Promise.resolve(bwrapNotFound(env));
  return once(`bwrap\0${bwrap}\0${workspace}`, () => {
    // Loaded here, not at the top: nothing before the `initialize` response starts bubblewrap.
    const { execFile } = process.getBuiltinModule("node:child_process");
    return new Promise<string | null>((resolve) => {
      execFile(bwrap, [...bwrapArgs(workspace, env), TRUE], { timeout: 10_000 }, (err, _stdout, stderr) => {
        resolve(err ? `bubblewrap cannot make its sandbox here: ${(String(stderr).trim() || err.message).split("\n")[0]}` : null);
      });
    });
  });
}

/** bubblewrap if it works for `workspace`, else Landlock if `landlock` says it runs, else none with both reasons. */
async function choose(workspace: string, env: NodeJS.ProcessEnv, landlock: () => Promise<LandlockProbe>): Promise<Confinement> {
  const bwrapFailure = await probeBubblewrap(workspace, env);
  if (bwrapFailure === null) return { kind: "bubblewrap", bwrap: findBwrap(env)! };
  const answer = await landlock();
  if ("abi" in answer) return { kind: "landlock", abi: answer.abi };
  return { kind: "none", reason: `${bwrapFailure}; and the Landlock confinement cannot run: ${answer.failure}` };
}

/** The confinement of bash for `workspace` (a real path), each probe run for this workspace: see the module comment. */
export function chooseSandbox(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<Confinement> {
  return choose(workspace, env, () =>
    once(`landlock\0${env.HARNESS_LANDLOCK ?? ""}\0${workspace}`, async () => {
      const answer = await probeLandlock(workspace, env);
      confirmRecalled(answer);
      return answer;
    }),
  );
}

/** A verdict this process took from the cache (verdict-cache.ts) and has not confirmed yet. */
let recalled: { folder: string; key: string; verdict: Verdict; env: NodeJS.ProcessEnv } | undefined;

/**
 * The rule parts the start probe computed, with what they were computed for (`partsFor`):
 * `initialize` checks its workspace's refusals on them (the process's own rules plus the
 * workspace) instead of computing them again before the response, as long as the same paths are
 * wanted hidden (the cli hides the session root before the start probe for that). So the report
 * sees the folders as they were when the process started, as the remembered verdict's key does;
 * every command computes its rules anew, and the first workspace probe, right after the
 * response, checks them with the helper.
 */
let startParts: { wanted: string; parts: RuleParts } | undefined;
const partsFor = (env: NodeJS.ProcessEnv) => `${env.HARNESS_SANDBOX_READ}\0${wantedHiddenKey(env)}`;

/** What the start probe looks its verdict up in where it has no private folder or no key: a folder no process can make. */
const NO_VERDICT_FOLDER = "/proc/self/no-verdict";

/** Where the start probe's verdict is remembered, and under which key; undefined where it is not. */
function verdictSlot(env: NodeJS.ProcessEnv): { folder: string; key: string } | undefined {
  if (landlockOff(env) || process.platform !== "linux") return undefined; // no helper is started: nothing to save
  // First, so that the rules hide it as they will from now on (it is made at the first start).
  let folder: string | undefined;
  try {
    folder = privateFolder();
  } catch {
    folder = undefined; // the probe says why; the key is computed all the same, the same code on every machine (scripts/start-up-cache.cjs)
  }
  try {
    const helper = helperIdentity();
    const parts = ruleParts(env);
    startParts = { wanted: partsFor(env), parts };
    const rules = landlockRules(undefined, undefined, env, parts);
    const key = helper && "args" in rules ? verdictKey(helper, rules.args) : undefined;
    return key && folder ? { folder, key } : undefined;
  } catch {
    return undefined; // the probe says why
  }
}

/** Remembers the start probe's `answer` (one that may change from run to run is forgotten instead: the next start probes). */
function remember(slot: { folder: string; key: string }, answer: LandlockProbe): void {
  if ("abi" in answer) rememberVerdict(slot.folder, slot.key, { abi: answer.abi });
  else if (answer.byHelper) rememberVerdict(slot.folder, slot.key, { failure: answer.failure });
  else forgetVerdict(slot.folder, slot.key);
}

/**
 * The first workspace probe of a process that reported a recalled verdict confirms it: the
 * workspace's rules are the start probe's plus the workspace, so the same answer means the start
 * probe's would be the same. Any other answer re-runs the start probe itself, in the background,
 * and remembers what it says. Commands never wait on this: they follow their workspace's probe.
 */
function confirmRecalled(answer: LandlockProbe): void {
  const pending = recalled;
  recalled = undefined;
  if (!pending) return;
  const same = "abi" in pending.verdict ? "abi" in answer && answer.abi === pending.verdict.abi : "failure" in answer && answer.failure === pending.verdict.failure;
  if (!same) void probeLandlock(undefined, pending.env).then((real) => remember(pending, real));
}

/**
 * The process's own Landlock probe, with no workspace (whether the helper runs and the kernel
 * confines it), once per environment that shapes its rules: `probeSandboxAtStart` starts it as
 * the process starts, `initialSandboxStatus` awaits it. The verdict a bridge before it
 * remembered for the same key (verdict-cache.ts) is taken instead of starting the helper, and
 * confirmed after the response by the first workspace probe (`confirmRecalled`).
 */
function landlockAtStart(env: NodeJS.ProcessEnv): Promise<LandlockProbe> {
  const key = [env.HARNESS_LANDLOCK, env.HOME, env.HARNESS_SANDBOX_READ, env.HARNESS_SANDBOX_HIDE, tempFolder()].join("\0");
  return once(`landlock-start\0${key}`, () => {
    const slot = verdictSlot(env);
    // Looked up even without a slot, where no file can be (a name /proc never has): the same
    // code on every machine, so the build's start-up run compiles the lookup too
    // (scripts/start-up-cache.cjs), though it has no private folder to read.
    const verdict = recalledVerdict(slot?.folder ?? NO_VERDICT_FOLDER, slot?.key ?? "");
    if (slot && verdict) {
      recalled = { ...slot, verdict, env };
      return Promise.resolve(verdict);
    }
    return probeLandlock(undefined, env).then((answer) => {
      if (slot) {
        remember(slot, answer);
        // Other keys' old files go after the response, asynchronously (pruneVerdicts: why).
        setImmediate(() => void pruneVerdicts(slot.folder));
      }
      return answer;
    });
  });
}

/**
 * Starts, as the process starts, the probe `initialize` will await when bubblewrap is visibly
 * not there (`sandboxStatusAtStart`): the helper then runs while the bridge loads and reads its
 * first request, instead of after it. Nothing is started where bubblewrap is (`initialize`
 * starts nothing then), where `ceiling` rules out `workspace-write`, or where an earlier start
 * remembered the verdict for this key (`landlockAtStart`). The probe runs the helper
 * with `true` and this process's environment: call it once provider keys are out of it.
 */
export function probeSandboxAtStart(ceiling: string, env: NodeJS.ProcessEnv = process.env): void {
  if (ceiling === "read-only" || sandboxStatusAtStart("workspace-write", env).bash !== "none") return;
  void landlockAtStart(env);
}

/** Forgets the probes (tests change `HARNESS_BWRAP`, `HARNESS_LANDLOCK`). */
export function resetSandboxProbes(): void {
  probes.clear();
  recalled = undefined;
  startParts = undefined;
}

const statusOf = (chosen: Confinement): SandboxStatus =>
  chosen.kind === "bubblewrap" ? { bash: "bubblewrap" } : chosen.kind === "landlock" ? { bash: "landlock", landlockAbi: chosen.abi } : { bash: "none", reason: chosen.reason };

/** The real path of `workspace`, or the status of a workspace that cannot be confined. */
function realWorkspace(workspace: string): string | SandboxStatus {
  try {
    return realpathSync.native(workspace);
  } catch (error) {
    return { bash: "none", reason: `the workspace is not accessible: ${(error as Error).message}` };
  }
}

/** What confines bash under `mode` for `workspace`, probed by starting the sandbox. */
export async function sandboxStatus(mode: string, workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<SandboxStatus> {
  if (mode !== "workspace-write") return sandboxStatusAtStart(mode, env);
  const real = realWorkspace(workspace);
  return typeof real === "string" ? statusOf(await chooseSandbox(real, env)) : real;
}

/**
 * What `initialize` reports: bubblewrap as far as start-up can tell without starting a process
 * (sandboxStatusAtStart; the first bash call still probes it, and falls back to Landlock if it
 * cannot run after all); where bubblewrap is visibly absent or refused, Landlock's answer — this
 * workspace's refusals, checked here, and the process's probe (one start of a 30 KB static
 * helper, begun as the process started: `probeSandboxAtStart`; or its verdict remembered by an
 * earlier start with the same key, confirmed after the response) — so the report says what will
 * confine bash. The first bash call probes this workspace's own confinement (`chooseSandbox`),
 * and refuses to run if it does not start after all.
 */
export async function initialSandboxStatus(mode: string, workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<SandboxStatus> {
  const start = sandboxStatusAtStart(mode, env);
  if (mode !== "workspace-write" || start.bash !== "none") return start;
  const real = realWorkspace(workspace);
  if (typeof real !== "string") return real;
  return statusOf(
    await choose(real, env, async () => {
      try {
        // Only the workspace's refusal: the rule arguments are the probe's and the commands' to build.
        const refused = landlockOff(env) ? undefined : landlockRefusal(real, [real], startParts?.wanted === partsFor(env) ? startParts.parts : ruleParts(env));
        if (refused) return { failure: refused };
      } catch (error) {
        return { failure: (error as Error).message };
      }
      return landlockAtStart(env);
    }),
  );
}
