/**
 * A hardened host's `/tmp` is mounted `noexec`: the Landlock helper, written to the private
 * folder under `TMPDIR`, cannot run from there (a bare `EACCES` before). Through the binary, in
 * a mount namespace of its own where `TMPDIR` is a `noexec` tmpfs: the helper goes to this
 * user's runtime folder (`XDG_RUNTIME_DIR`) and bash runs confined; with no folder it may run
 * from, `initialize` and bash name the `noexec` mount and the fix. Needs `unshare -m` and a
 * tmpfs mount (root, or an unprivileged user namespace); skipped, saying so, where neither works.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";

const asRoot = process.getuid?.() === 0;
// As root a mount namespace is enough; otherwise one inside a user namespace of its own (-r).
const unshareArgs = asRoot ? ["-m"] : ["-r", "-m"];
const MOUNT = 'mount -t tmpfs -o noexec,mode=0755 tmpfs "$1" && shift && exec "$@"';

function canMountNoexec(): boolean {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-noexec-check-"));
  try {
    return spawnSync("unshare", [...unshareArgs, "sh", "-c", MOUNT, "sh", dir, "true"], { timeout: 10_000 }).status === 0;
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
// Landlock itself is required, as by the other Landlock tests (CI's kernels have it).
const runs = process.platform === "linux" && canMountNoexec();

let root: string;
let ws: string;
let noexec: string;
let runtime: string;
const clients: RawClient[] = [];
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-noexec-")));
  ws = path.join(root, "ws");
  noexec = path.join(root, "noexec");
  runtime = path.join(root, "run");
  for (const dir of [ws, noexec, runtime]) fs.mkdirSync(dir, { mode: 0o700 });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  fs.rmSync(root, { recursive: true, force: true });
});

/** The binary with TMPDIR (and HOME) on a noexec tmpfs mounted over `noexec`, in a mount namespace of its own. */
function bridge(env: NodeJS.ProcessEnv): RawClient {
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HARNESS_BWRAP: "off", TMPDIR: noexec, HOME: noexec, ...env };
  const c = new RawClient({ command: "unshare", args: [...unshareArgs, "sh", "-c", MOUNT, "sh", noexec, BINARY, "--stdio", "--no-session-log"], env: base });
  clients.push(c);
  return c;
}

async function bashTurn(c: RawClient): Promise<{ sandbox: any; result: any }> {
  const script = path.join(root, "bash.json");
  fs.writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command: "echo confined-ran" } }] }, { text: "done" }] }] }));
  c.request(1, "initialize", initParams(ws, script));
  const init = await c.response(1);
  expect(init.error).toBeUndefined();
  c.request(2, "session/prompt", promptParams("s"));
  expect((await c.response(2)).result).toMatchObject({ status: "ok" });
  return { sandbox: init.result.sandbox, result: c.events("s").find((e) => e.type === "tool/result").data };
}

describe.runIf(runs)("TMPDIR on a noexec mount (the binary, Landlock)", () => {
  it("runs the helper from the runtime folder instead, and bash runs confined", async () => {
    const { sandbox, result } = await bashTurn(bridge({ XDG_RUNTIME_DIR: runtime }));
    expect(sandbox).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
    expect(result.isError).toBe(false);
    expect(result.content[0].text).toContain("confined-ran");
    const helpers = fs.readdirSync(path.join(runtime, "harness-bridge")).filter((n) => n.startsWith("landlock-exec-"));
    expect(helpers).toHaveLength(1);
    expect(fs.statSync(path.join(runtime, "harness-bridge")).mode & 0o077).toBe(0);
  });

  it("with nowhere it may run from, initialize and bash name the noexec mount and the fix", async () => {
    const { sandbox, result } = await bashTurn(bridge({ XDG_RUNTIME_DIR: undefined }));
    expect(sandbox.bash).toBe("none");
    expect(sandbox.reason).toContain(`it is on ${noexec}, mounted noexec`);
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/mounted noexec.*Fix: set TMPDIR to a folder this user can write, on a mount that allows running programs \(not noexec\)/);
  });
});

describe("the helper's fallback folders are hidden from the start (the binary)", () => {
  it("a file tool may not write the runtime folder's helper folder, even before any bash call chose it", async () => {
    const run = path.join(ws, "run");
    fs.mkdirSync(path.join(run, "harness-bridge"), { recursive: true, mode: 0o700 });
    const script = path.join(root, "write.json");
    const target = "run/harness-bridge/landlock-exec-0000000000000000";
    fs.writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: target, content: "#!/bin/sh\n" } }] }, { text: "done" }] }] }));
    const c = new RawClient({ env: { ...process.env, HARNESS_BWRAP: "off", XDG_RUNTIME_DIR: run } });
    clients.push(c);
    c.request(1, "initialize", initParams(ws, script));
    expect((await c.response(1)).error).toBeUndefined();
    c.request(2, "session/prompt", promptParams("s"));
    expect((await c.response(2)).result).toMatchObject({ status: "ok" });
    expect(c.events("s").find((e) => e.type === "tool/result").data.isError).toBe(true);
    expect(fs.existsSync(path.join(ws, target))).toBe(false);
  });

  it("bash may not make the runtime folder's helper folder before any bridge chose it (Landlock refuses such a workspace)", async () => {
    // TMPDIR allows running programs here: no fallback is chosen, none exists. A folder bash
    // made there (0700, this uid) would pass the helper's checks for a later noexec bridge.
    const script = path.join(root, "plant.json");
    const command = "umask 077 && mkdir -p run/harness-bridge && printf x > run/harness-bridge/landlock-exec-0000000000000000";
    fs.writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command } }] }, { text: "done" }] }] }));
    const c = new RawClient({ env: { ...process.env, HARNESS_BWRAP: "off", XDG_RUNTIME_DIR: path.join(ws, "run") } });
    clients.push(c);
    c.request(1, "initialize", initParams(ws, script));
    const init = await c.response(1);
    expect(init.result.sandbox).toMatchObject({ bash: "none", reason: expect.stringContaining("harness-bridge") });
    c.request(2, "session/prompt", promptParams("s"));
    await c.response(2);
    expect(fs.existsSync(path.join(ws, "run", "harness-bridge"))).toBe(false);
  });
});
