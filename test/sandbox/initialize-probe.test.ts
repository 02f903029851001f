/**
 * What `initialize` reports of the sandbox where bubblewrap is not there, through the binary:
 * Landlock's probe starts with the process, before any request is read, and what it finds is
 * what `initialize` reports and what bash then does — a workspace Landlock refuses, a helper
 * that cannot be written, a Landlock that cannot run (bash refused with the same reason), a
 * changed helper on disk (replaced, never run). Each bridge gets a TMPDIR of its own, so its private folder is this test's.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, ROOT, initParams, promptParams } from "../support/raw-client.js";

let root: string;
let ws: string;
let tmp: string;
const clients: RawClient[] = [];
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-probe-")));
  ws = path.join(root, "ws");
  tmp = path.join(root, "tmp");
  fs.mkdirSync(ws);
  fs.mkdirSync(tmp);
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  fs.rmSync(root, { recursive: true, force: true });
});

const bridge = (env: NodeJS.ProcessEnv, args = ["--stdio", "--no-session-log"]) => {
  const c = new RawClient({ env: { ...process.env, HARNESS_BWRAP: "off", TMPDIR: tmp, ...env }, args });
  clients.push(c);
  return c;
};
const initialize = async (c: RawClient, cwd = ws, extra: object = {}) => {
  c.request(1, "initialize", initParams(cwd, "demo", extra));
  const r = await c.response(1);
  expect(r.error).toBeUndefined();
  return r.result.sandbox;
};
const privateFolder = () => path.join(tmp, `harness-bridge-${process.getuid!()}`);
const helpers = () => (fs.existsSync(privateFolder()) ? fs.readdirSync(privateFolder()).filter((n) => n.startsWith("landlock-exec-")) : []);

describe("initialize's sandbox where bubblewrap is switched off (the binary)", () => {
  it("probes Landlock as the process starts, before any request is read, and reports its ABI", async () => {
    const c = bridge({});
    const deadline = Date.now() + 10_000;
    while (helpers().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(helpers(), "the helper is written by the probe, before initialize is sent").toHaveLength(1);
    expect(await initialize(c)).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
  });

  it("starts nothing under a read-only ceiling", async () => {
    const c = bridge({}, ["--stdio", "--no-session-log", "--permission-mode", "read-only"]);
    expect(await initialize(c)).toEqual({ bash: "none", reason: expect.stringMatching(/read-only/) });
    expect(helpers()).toEqual([]);
  });

  it("reports a workspace Landlock cannot confine (it holds a credential store) as none, with the reason", async () => {
    fs.mkdirSync(path.join(ws, ".ssh"));
    expect(await initialize(bridge({ HOME: ws }))).toEqual({
      bash: "none",
      reason: expect.stringMatching(/HARNESS_BWRAP=off\); and the Landlock confinement cannot run: the workspace holds .*\.ssh, which Landlock cannot hide/),
    });
  });

  it("reports a workspace that holds the session logs as none, with the reason (they are hidden from the start)", async () => {
    const sessions = path.join(ws, "sessions");
    fs.mkdirSync(sessions);
    const c = bridge({ HARNESS_SESSION_ROOT: sessions }, ["--stdio"]);
    expect(await initialize(c)).toEqual({
      bash: "none",
      reason: expect.stringMatching(/Landlock confinement cannot run: the workspace holds .*\/ws\/sessions, which Landlock cannot hide/),
    });
  });

  it("a helper that cannot be written (its private folder cannot be made) is reported as none, with the reason", async () => {
    const missing = path.join(root, "no-such-tmp");
    expect(await initialize(bridge({ TMPDIR: missing }))).toEqual({ bash: "none", reason: expect.stringMatching(/Landlock confinement cannot run: the temporary folder .*no-such-tmp cannot hold the Landlock helper \(ENOENT/) });
  });

  it("a Landlock that cannot run: initialize says why, and bash is refused with the same reason, running nothing", async () => {
    const script = path.join(root, "bash.json");
    fs.writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command: "echo ran > ran.txt" } }] }, { text: "done" }] }] }));
    const c = bridge({ HARNESS_LANDLOCK: "off" });
    const sandbox = await initialize(c, ws, { model: script });
    expect(sandbox).toEqual({ bash: "none", reason: expect.stringMatching(/Landlock confinement cannot run: Landlock is switched off \(HARNESS_LANDLOCK=off\)/) });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result).toMatchObject({ status: "ok" });
    const result = c.events("s").find((e) => e.type === "tool/result");
    expect(result.data.isError).toBe(true);
    expect(result.data.content[0].text).toMatch(/^bash was not run: .*Landlock confinement cannot run: Landlock is switched off/);
    expect(fs.existsSync(path.join(ws, "ran.txt"))).toBe(false);
  });

  it("never runs a helper changed on disk: it is replaced by the one the binary carries", async () => {
    const arch = process.arch;
    const sha = fs.readFileSync(path.join(ROOT, "build", "sandbox", `landlock-exec-${arch}.sha256`), "utf8").trim();
    const carried = fs.readFileSync(path.join(ROOT, "build", "sandbox", `landlock-exec-${arch}`));
    const mark = path.join(root, "tampered-ran");
    fs.mkdirSync(privateFolder(), { mode: 0o700 });
    const planted = path.join(privateFolder(), `landlock-exec-${sha.slice(0, 16)}`);
    fs.writeFileSync(planted, `#!/bin/sh\necho tampered > ${JSON.stringify(mark)}\necho landlock-abi 99 >&2\n`, { mode: 0o700 });
    expect(await initialize(bridge({}))).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
    expect(fs.existsSync(mark)).toBe(false);
    expect(fs.readFileSync(planted).equals(carried)).toBe(true);
  });
});
