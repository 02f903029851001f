/**
 * The main bundle's start-up code cache (scripts/start-up-cache.cjs) is made by a run of the
 * bridge through the sandbox's start-up path without bubblewrap (the Landlock verdict's key and
 * rules), with its inputs fixed, so its bytes do not depend on the build machine: not on what
 * /etc holds, on /proc's boot id, on the uid, on a fresh /proc. The machines are stood in for by
 * bubblewrap's views of this one. The build is the one test/support/build-once.ts made.
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
const request = `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { cwd: "/", provider: "scripted", model: "demo" } })}\n`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-start-up-cache-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The cache the start-up run makes of the build's bundle in a copy of build/, run as build.mjs runs it, under `wrapper`. */
function startUpCache(name: string, wrapper: string[] = []): Buffer {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  fs.copyFileSync(path.join(build, bundle), path.join(dir, bundle));
  fs.cpSync(path.join(build, "sandbox"), path.join(dir, "sandbox"), { recursive: true });
  const argv = [process.execPath, "--random-seed=1", "--predictable", ...seaConfig.execArgv, path.join(ROOT, "scripts", "start-up-cache.cjs"), process.arch, bundle];
  const command = [...wrapper, ...(wrapper.length ? ["/usr/bin/env", "-i"] : []), ...argv];
  const run = spawnSync(command[0], command.slice(1), { cwd: dir, env: {}, input: request, stdio: ["pipe", "ignore", "pipe"], encoding: "utf8" });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return fs.readFileSync(path.join(dir, `${bundle}.${process.arch}.cache`));
}

const bwrap = findBwrap({});
const bwrapWorks = bwrap !== null && spawnSync(bwrap, ["--dev-bind", "/", "/", "--unshare-user", "true"]).status === 0;

describe("the start-up code cache", () => {
  it("is the build's", () => {
    expect(startUpCache("plain").equals(fs.readFileSync(path.join(build, seaConfig.assets[`${bundle}.cache`])))).toBe(true);
  }, 60_000);

  it.skipIf(!bwrapWorks)("is the same without /etc, without a boot id, as another uid with a fresh /proc", () => {
    const plain = fs.readFileSync(path.join(build, seaConfig.assets[`${bundle}.cache`]));
    const views: [string, string[]][] = [
      ["no-etc", ["--tmpfs", "/etc"]],
      ["no-boot-id", ["--tmpfs", "/proc/sys/kernel/random"]],
      ["other-uid", ["--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--proc", "/proc"]],
    ];
    for (const [name, view] of views) {
      const cache = startUpCache(name, [bwrap!, "--dev-bind", "/", "/", ...view]);
      expect({ name, same: cache.equals(plain) }).toEqual({ name, same: true });
    }
  }, 120_000);
});
