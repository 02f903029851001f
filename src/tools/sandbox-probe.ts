/**
 * Probing the bash sandbox: one bwrap start per workspace answers whether it works here, and
 * what `initialize` reports as `sandbox`. Apart from sandbox.ts because it loads
 * node:child_process, which the server takes only when `initialize` needs it (a dynamic import
 * of this module), not at start-up.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { BWRAP_LOCATIONS, bwrapArgs, findBash, findBwrap } from "./sandbox.js";

/** What confines bash in this process: the `sandbox` of the `initialize` result. */
export interface SandboxStatus {
  bash: "bubblewrap" | "none";
  reason?: string;
}

const probes = new Map<string, Promise<string | null>>();

/** null when the sandbox works for `workspace` here, else why not (probed once per workspace and bwrap). */
export function probeSandbox(workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const bwrap = findBwrap(env);
  if (!bwrap) return Promise.resolve(`bubblewrap (bwrap) was not found at ${[env.HARNESS_BWRAP || undefined, ...BWRAP_LOCATIONS].filter(Boolean).join(", ")}`);
  const key = `${bwrap}\0${workspace}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = new Promise<string | null>((resolve) => {
      execFile(bwrap, [...bwrapArgs(workspace, env), findBash(), "-c", "true"], { timeout: 10_000 }, (err, _stdout, stderr) => {
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

/** What confines bash under `mode` for `workspace`. */
export async function sandboxStatus(mode: string, workspace: string, env: NodeJS.ProcessEnv = process.env): Promise<SandboxStatus> {
  if (mode === "read-only") return { bash: "none", reason: "bash is not offered in read-only mode" };
  if (mode === "full") return { bash: "none", reason: "permission mode full: bash runs unconfined, by design" };
  let real: string;
  try {
    real = fs.realpathSync(workspace);
  } catch (error) {
    return { bash: "none", reason: `the workspace is not accessible: ${(error as Error).message}` };
  }
  const failure = await probeSandbox(real, env);
  return failure === null ? { bash: "bubblewrap" } : { bash: "none", reason: failure };
}

