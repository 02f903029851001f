/**
 * Probing the bash sandbox: one bwrap start per workspace answers whether it works here. The
 * bash tool awaits it before its first command; the server starts it right after the
 * `initialize` response (which reports `sandboxStatusAtStart`), so it is ready by then and
 * costs start-up nothing.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { bwrapArgs, bwrapNotFound, findBwrap } from "./bwrap.js";
import { sandboxStatusAtStart, type SandboxStatus } from "./status.js";

/** What the probe runs in the sandbox: `true` (half the time of a bash start). */
const TRUE = fs.existsSync("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";

const probes = new Map<string, Promise<string | null>>();

/** null when the sandbox works for `workspace` here, else why not (probed once per workspace and bwrap). */
export function probeSandbox(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const bwrap = findBwrap(env);
  if (!bwrap) return Promise.resolve(bwrapNotFound(env));
  const key = `${bwrap}\0${workspace}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = new Promise<string | null>((resolve) => {
      execFile(bwrap, [...bwrapArgs(workspace, env), TRUE], { timeout: 10_000 }, (err, _stdout, stderr) => {
        resolve(err ? `bubblewrap cannot make its sandbox here: ${(String(stderr).trim() || err.message).split("\n")[0]}` : null);
      });
    });
    probes.set(key, probe);
  }
  return probe;
}

/** Forgets the probes (tests change `HARNESS_BWRAP`). */
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
  const failure = await probeSandbox(real, env);
  return failure === null ? { bash: "bubblewrap" } : { bash: "none", reason: failure };
}

