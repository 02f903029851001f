/**
 * The main bundle's start-up code cache (scripts/start-up-cache.cjs) is made by a run of the
 * bridge through the sandbox's start-up path without bubblewrap (the Landlock verdict's key and
 * rules), with its inputs fixed, so its bytes do not depend on the build machine: not on what
 * /etc holds, on /proc's boot id, on the uid, on a fresh /proc. The same run goes on to a first turn,
 * after which it makes the agent chunk's cache (only the main bundle can evaluate that chunk):
 * the same holds for it. The machines are stood in for by bubblewrap's views of this one. The build is the one
 * test/support/build-once.ts made.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findBwrap } from "../../src/sandbox/bwrap.js";
import { ROOT } from "../support/raw-client.js";

const build = path.join(ROOT, "build");
const seaConfig = JSON.parse(fs.readFileSync(path.join(build, `sea-config-${process.arch}.json`), "utf8")) as { execArgv: string[]; assets: Record<string, string> };
const bundle = "harness-bridge.sea.cjs";
const agentChunk = "agent.cjs";
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-start-up-cache-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/**
 * The caches the start-up run makes of the build's bundle and agent chunk in a copy of build/
 * (its chunks, not their caches), run as build.mjs runs it, under `wrapper`.
 */
function startUpCache(name: string, wrapper: string[] = []): Buffer[] {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  for (const file of fs.readdirSync(build).filter((f) => f.endsWith(".cjs"))) fs.copyFileSync(path.join(build, file), path.join(dir, file));
  fs.cpSync(path.join(build, "sandbox"), path.join(dir, "sandbox"), { recursive: true });
  const argv = [process.execPath, "--random-seed=1", "--predictable", ...seaConfig.execArgv, path.join(ROOT, "scripts", "start-up-cache.cjs"), process.arch, bundle, agentChunk];
  const command = [...wrapper, ...(wrapper.length ? ["/usr/bin/env", "-i"] : []), ...argv];
  const run = spawnSync(command[0], command.slice(1), { cwd: dir, env: {}, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return [bundle, agentChunk].map((file) => fs.readFileSync(path.join(dir, `${file}.${process.arch}.cache`)));
}

/** The build's caches of the bundle and the agent chunk. */
const built = (): Buffer[] => [bundle, agentChunk].map((file) => fs.readFileSync(path.join(build, seaConfig.assets[`${file}.cache`]!)));

const bwrap = findBwrap({});
const bwrapWorks = bwrap !== null && spawnSync(bwrap, ["--dev-bind", "/", "/", "--unshare-user", "true"]).status === 0;

describe("the start-up code cache", () => {
  it("is the build's, and so is the agent chunk's", () => {
    const [main, agent] = startUpCache("plain");
    const [builtMain, builtAgent] = built();
    expect(main!.equals(builtMain!)).toBe(true);
    expect(agent!.equals(builtAgent!)).toBe(true);
  }, 60_000);

  it.skipIf(!bwrapWorks)("is the same without /etc, without a boot id, as another uid with a fresh /proc", () => {
    const plain = built();
    const views: [string, string[]][] = [
      ["no-etc", ["--tmpfs", "/etc"]],
      ["no-boot-id", ["--tmpfs", "/proc/sys/kernel/random"]],
      ["other-uid", ["--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--proc", "/proc"]],
    ];
    for (const [name, view] of views) {
      const caches = startUpCache(name, [bwrap!, "--dev-bind", "/", "/", ...view]);
      expect({ name, same: caches.map((cache, i) => cache.equals(plain[i]!)) }).toEqual({ name, same: [true, true] });
    }
  }, 120_000);
});
