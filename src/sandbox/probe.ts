/**
 * Choosing what confines bash in `workspace-write`: bubblewrap when its start-up probe works
 * (one bwrap start per workspace), else the Landlock confinement when its probe works (one
 * start of the helper), else nothing — and then bash refuses (bash.ts), naming both fixes.
 * bubblewrap comes first because it gives more: a PID namespace, hidden paths inside readable
 * folders (docs/tools.md has the table). The bash tool awaits the choice before its first
 * command; the server starts it right after the `initialize` response, so it is ready by then.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { bwrapArgs, bwrapNotFound, findBwrap } from "./bwrap.js";
import { probeLandlock } from "./landlock.js";
import { sandboxStatusAtStart, type SandboxStatus } from "./status.js";

/** What confines bash for a workspace. */
export type Confinement = { kind: "bubblewrap"; bwrap: string } | { kind: "landlock"; abi: number } | { kind: "none"; reason: string };

/** What the probe runs in the sandbox: `true` (half the time of a bash start). */
const TRUE = fs.existsSync("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";

const probes = new Map<string, Promise<unknown>>();
function once<T>(key: string, probe: () => Promise<T>): Promise<T> {
  let p = probes.get(key) as Promise<T> | undefined;
  if (!p) probes.set(key, (p = probe()));
  return p;
}

/** null when bubblewrap makes its sandbox for `workspace` here, else why not (probed once per workspace and bwrap). */
export function probeBubblewrap(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const bwrap = findBwrap(env);
  if (!bwrap) return Promise.resolve(bwrapNotFound(env));
  return once(`bwrap\0${bwrap}\0${workspace}`, () => new Promise<string | null>((resolve) => {
    execFile(bwrap, [...bwrapArgs(workspace, env), TRUE], { timeout: 10_000 }, (err, _stdout, stderr) => {
      resolve(err ? `bubblewrap cannot make its sandbox here: ${(String(stderr).trim() || err.message).split("\n")[0]}` : null);
    });
  }));
}

/** The confinement of bash for `workspace` (a real path): see the module comment. */
export async function chooseSandbox(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<Confinement> {
  const bwrapFailure = await probeBubblewrap(workspace, env);
  if (bwrapFailure === null) return { kind: "bubblewrap", bwrap: findBwrap(env)! };
  const landlock = await once(`landlock\0${env.HARNESS_LANDLOCK ?? ""}\0${workspace}`, () => probeLandlock(workspace, env));
  if ("abi" in landlock) return { kind: "landlock", abi: landlock.abi };
  return { kind: "none", reason: `${bwrapFailure}; and the Landlock confinement cannot run: ${landlock.failure}` };
}

/** Forgets the probes (tests change `HARNESS_BWRAP`, `HARNESS_LANDLOCK`). */
export function resetSandboxProbes(): void {
  probes.clear();
}

/** What confines bash under `mode` for `workspace`, probed by starting the sandbox. */
export async function sandboxStatus(mode: string, workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<SandboxStatus> {
  if (mode !== "workspace-write") return sandboxStatusAtStart(mode, env);
  let real: string;
  try {
    real = fs.realpathSync(workspace);
  } catch (error) {
    return { bash: "none", reason: `the workspace is not accessible: ${(error as Error).message}` };
  }
  const chosen = await chooseSandbox(real, env);
  if (chosen.kind === "bubblewrap") return { bash: "bubblewrap" };
  if (chosen.kind === "landlock") return { bash: "landlock", landlockAbi: chosen.abi };
  return { bash: "none", reason: chosen.reason };
}

/**
 * What `initialize` reports: bubblewrap as far as start-up can tell without starting a process
 * (sandboxStatusAtStart; the first bash call still probes it, and falls back to Landlock if it
 * cannot run after all); where bubblewrap is visibly absent or refused, the Landlock probe's
 * answer — one start of a 30 KB static helper — so the report says what will confine bash.
 */
export async function initialSandboxStatus(mode: string, workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<SandboxStatus> {
  const start = sandboxStatusAtStart(mode, env);
  if (mode !== "workspace-write" || start.bash !== "none") return start;
  return sandboxStatus(mode, workspace, env);
}
