/**
 * The binary run once under an open-file limit (`prlimit --nofile=N`), fed `initialize` and a
 * prompt on stdin: what the descriptor tests sweep limits with. A run whose bridge could not
 * answer `initialize` (too few descriptors for Node, the script or the sandbox) has no bridge to
 * hold to anything, and is `undefined`.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { BINARY, promptParams } from "./raw-client.js";

/** stdin for one `initialize` with `init` params, then a prompt in session "s". */
export function initAndPrompt(init: unknown): string {
  return [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: init },
    { jsonrpc: "2.0", id: 2, method: "session/prompt", params: promptParams("s") },
  ]
    .map((f) => JSON.stringify(f) + "\n")
    .join("");
}

/** The bridge run with `args` under `limit`; its frames, or `undefined` when it did not answer `initialize`. */
export function runUnderLimit(limit: number, args: string[], input: string, timeout: number): { run: SpawnSyncReturns<string>; frames: any[] } | undefined {
  const run = spawnSync("prlimit", [`--nofile=${limit}`, BINARY, ...args], { input, timeout, encoding: "utf8" });
  const frames = run.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  return frames.find((f) => f.id === 1)?.result ? { run, frames } : undefined;
}
