/**
 * The Landlock verdict remembered between starts (src/sandbox/verdict-cache.ts), through the
 * binary with bubblewrap switched off: the first start probes and remembers; the next answers
 * `initialize` from it without needing the helper (its copy is replaced by a folder, so a probe
 * could not run it); a changed key, or a file or folder that is not safe, re-probes; a wrong
 * verdict never lets bash run unconfined and is corrected after the response. Each bridge gets
 * a TMPDIR of this test's, so the private folder is this test's.
 */
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";

let root: string;
let ws: string;
let tmp: string;
const clients: RawClient[] = [];
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-verdict-e2e-")));
  ws = path.join(root, "ws");
  tmp = path.join(root, "tmp");
  fs.mkdirSync(ws);
  fs.mkdirSync(tmp);
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  fs.chmodSync(root, 0o700);
  fs.rmSync(root, { recursive: true, force: true });
});

const bridge = (env: NodeJS.ProcessEnv = {}) => {
  const c = new RawClient({ env: { ...process.env, HARNESS_BWRAP: "off", TMPDIR: tmp, ...env }, args: ["--stdio", "--no-session-log"] });
  clients.push(c);
  return c;
};
const initialize = async (c: RawClient, extra: object = {}) => {
  c.request(1, "initialize", initParams(ws, "demo", extra));
  const r = await c.response(1);
  expect(r.error).toBeUndefined();
  return r.result.sandbox;
};
const privateFolder = () => path.join(tmp, `harness-bridge-${process.getuid!()}`);
/** The one verdict file of this test's bridges (one key: the same environment). */
const verdictFile = () => {
  const files = fs.readdirSync(privateFolder()).filter((n) => /^landlock-verdict-[0-9a-f]{16}$/.test(n));
  expect(files).toHaveLength(1);
  return path.join(privateFolder(), files[0]!);
};
const remembered = (file = verdictFile()) => JSON.parse(fs.readFileSync(file, "utf8")) as { format: number; key: string; verdict: { abi?: number; failure?: string } };
const plant = (content: object, file = verdictFile()) => fs.writeFileSync(file, JSON.stringify(content), { mode: 0o600 });
/** Waits until `done` holds (the bridge works on after its response), failing after 15 s. */
const until = async (done: () => boolean, what: string) => {
  const deadline = Date.now() + 15_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const exists = (p: string) => fs.existsSync(p);

/** One start that probes: the kernel's ABI, with its verdict remembered. */
async function primed(): Promise<number> {
  const c = bridge();
  const sandbox = await initialize(c);
  expect(sandbox).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
  await c.dispose();
  return sandbox.landlockAbi;
}
/** Replaces the helper's copy by a folder: no probe can write or run the helper any more. */
function blockHelper(): void {
  const [helper] = fs.readdirSync(privateFolder()).filter((n) => n.startsWith("landlock-exec-") && !n.includes("."));
  fs.rmSync(path.join(privateFolder(), helper!));
  fs.mkdirSync(path.join(privateFolder(), helper!));
}

/** strace, where it is installed and may trace here (not through the arm64 emulator). */
const strace = process.env.HARNESS_TEST_BINARY ? undefined : ["/usr/bin/strace", "/bin/strace"].find((p) => fs.existsSync(p) && spawnSync(p, ["-qq", "-o", "/dev/null", "/bin/true"]).status === 0);

describe("the remembered Landlock verdict (the binary, bubblewrap off)", () => {
  it.skipIf(!strace)("(strace) a start with a remembered verdict starts no helper before its response; the first start does", async () => {
    const helpersBeforeResponse = async (n: number) => {
      const trace = path.join(root, `trace-${n}`);
      const c = new RawClient({
        command: strace,
        args: ["-f", "-qq", "-e", "trace=execve,write,writev", "-o", trace, BINARY, "--stdio", "--no-session-log"],
        env: { ...process.env, HARNESS_BWRAP: "off", TMPDIR: tmp },
      });
      clients.push(c);
      expect(await initialize(c)).toMatchObject({ bash: "landlock" });
      await c.dispose();
      const lines = fs.readFileSync(trace, "utf8").split("\n");
      const response = lines.findIndex((l) => /\bwritev?\(1, /.test(l));
      expect(response, "the response's write is traced").toBeGreaterThan(0);
      return lines.slice(0, response).filter((l) => /execve\("[^"]*landlock-exec-/.test(l)).length;
    };
    expect(await helpersBeforeResponse(1)).toBe(1);
    expect(await helpersBeforeResponse(2)).toBe(0);
  });


  it("the first start probes and remembers; the next answers from it without the helper", async () => {
    const abi = await primed();
    expect(fs.statSync(verdictFile()).mode & 0o777).toBe(0o600);
    expect(remembered()).toMatchObject({ format: 1, verdict: { abi } });
    blockHelper();
    expect(await initialize(bridge())).toEqual({ bash: "landlock", landlockAbi: abi });
  });

  it("a wrong remembered verdict never runs bash unconfined: the command is refused, and the verdict forgotten", async () => {
    await primed();
    const file = verdictFile();
    blockHelper();
    const script = path.join(root, "bash.json");
    fs.writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command: "echo ran > ran.txt" } }] }, { text: "done" }] }] }));
    const c = bridge();
    expect(await initialize(c, { model: script })).toMatchObject({ bash: "landlock" });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result).toMatchObject({ status: "ok" });
    const result = c.events("s").find((e) => e.type === "tool/result");
    expect(result.data.isError).toBe(true);
    expect(result.data.content[0].text).toMatch(/^bash was not run: .*Landlock confinement cannot run/);
    expect(exists(path.join(ws, "ran.txt"))).toBe(false);
    await until(() => !exists(file), "the contradicted verdict is forgotten");
    // The next start probes, and says why bash cannot run.
    expect(await initialize(bridge())).toMatchObject({ bash: "none", reason: expect.stringMatching(/Landlock confinement cannot run/) });
  });

  it("a verdict for another key is not used; a recalled one that the first probe contradicts is rewritten", async () => {
    const abi = await primed();
    const { key } = remembered();
    plant({ format: 1, key: key.replace(/^boot .*$/m, "boot another-boot"), verdict: { abi: 77 } });
    expect(await initialize(bridge())).toEqual({ bash: "landlock", landlockAbi: abi });
    expect(remembered()).toEqual({ format: 1, key, verdict: { abi } });
    // The same key: recalled, then contradicted by the workspace's probe after the response.
    plant({ format: 1, key, verdict: { abi: 77 } });
    expect(await initialize(bridge())).toEqual({ bash: "landlock", landlockAbi: 77 });
    await until(() => remembered().verdict.abi === abi, "the recalled verdict is corrected");
    // Another rule (a folder to read): another key, probed.
    fs.mkdirSync(path.join(root, "extra"));
    const file = verdictFile();
    plant({ format: 1, key, verdict: { abi: 77 } });
    expect(await initialize(bridge({ HARNESS_SANDBOX_READ: path.join(root, "extra") }))).toEqual({ bash: "landlock", landlockAbi: abi });
    const other = fs.readdirSync(privateFolder()).filter((n) => n.startsWith("landlock-verdict-") && n !== path.basename(file));
    expect(other).toHaveLength(1);
    expect(fs.readFileSync(path.join(privateFolder(), other[0]!), "utf8")).toContain(path.join(root, "extra"));
    expect(remembered(file).verdict.abi, "the first key's file is its own").toBe(77);
  });

  it("a FIFO in its place, or a private folder others can write, is not used: the helper is probed", async () => {
    const abi = await primed();
    const { key } = remembered();
    const file = verdictFile();
    fs.rmSync(file);
    execFileSync("mkfifo", ["-m", "600", file]);
    expect(await initialize(bridge())).toEqual({ bash: "landlock", landlockAbi: abi });
    fs.writeFileSync(file, JSON.stringify({ format: 1, key, verdict: { abi: 77 } }), { mode: 0o600 });
    fs.chmodSync(privateFolder(), 0o777);
    expect(await initialize(bridge())).toEqual({ bash: "landlock", landlockAbi: abi });
    expect(remembered().verdict.abi, "the unsafe folder's file is left as it was").toBe(77);
  });
});
