import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { pidsWith, waitFor } from "../reliability/support/procs.js";
import { BASH_OUTPUT_HEAD_BYTES, BASH_OUTPUT_TAIL_BYTES, bashTool } from "../../src/tools/bash.js";
import { commandEnv } from "../../src/sandbox/command-env.js";
import { findBwrap } from "../../src/sandbox/bwrap.js";
import { resetSandboxProbes } from "../../src/sandbox/probe.js";
import { HeadTailBuffer } from "../../src/tools/process-group.js";
import { ToolError } from "../../src/tools/types.js";
import { makeCtx, makeSandbox, restoreEnv, text } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const savedEnv = { ...process.env };
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => {
  sb.cleanup();
  restoreEnv(savedEnv);
  resetSandboxProbes();
});

type Mode = "workspace-write" | "full" | "read-only";
const run = (args: Record<string, unknown>, mode: Mode = "full", signal?: AbortSignal) => bashTool.execute(args as never, makeCtx(sb.ws, mode, signal));

let counter = 0;
const marker = () => `hbmark${process.pid}x${Date.now() % 100000}x${++counter}`;
/**
 * A process ignoring SIGTERM, and a plain long-running one, both tagged with `m` in their command
 * lines (`; :` keeps bash from exec'ing the sleep, which would drop the tag).
 */
const stubborn = (m: string) => `bash -c 'trap "" TERM; while :; do sleep 0.2; done' ${m}-stubborn & bash -c 'sleep 86400; :' ${m}-plain & `;

// workspace-write runs bash only inside a sandbox (it fails closed without one): bubblewrap, which
// CI installs (test/tools/sandbox.test.ts fails plainly without it), and the Landlock
// confinement, reached with bubblewrap switched off (HARNESS_BWRAP=off).
type Variant = { name: string; mode: Mode; env: Record<string, string> };
const variants: Variant[] = [
  { name: "full", mode: "full", env: {} },
  { name: "workspace-write", mode: "workspace-write", env: {} },
  { name: "workspace-write, Landlock", mode: "workspace-write", env: { HARNESS_BWRAP: "off" } },
];
const confined = variants.filter((v) => v.mode === "workspace-write");

describe("bash", () => {
  it("runs in the workspace, merges stderr in order, reports the exit code", async () => {
    const out = await run({ command: "pwd; echo a; echo b >&2; echo c; exit 3" });
    expect(out.isError).toBe(false);
    expect(text(out)).toBe(`${fs.realpathSync(sb.ws)}\na\nb\nc\n[exit code 3]`);
    expect(text(await run({ command: "true" }))).toBe("(no output)\n[exit code 0]");
  });

  it("reports a death by signal", async () => {
    const out = await run({ command: "echo before; kill -KILL $$" });
    expect(text(out)).toBe("before\n[killed by signal SIGKILL]");
  });

  it("rejects bad arguments and read-only mode", async () => {
    await expect(run({})).rejects.toThrow(/command/);
    await expect(run({ command: 7 })).rejects.toThrow(/command/);
    await expect(run({ command: "true", timeoutMs: "5" })).rejects.toThrow(/timeoutMs/);
    await expect(run({ command: "true", timeoutMs: -1 })).rejects.toThrow(ToolError);
    await expect(run({ command: "true" }, "read-only")).rejects.toThrow(/read-only/);
    expect(bashTool.readOnly).toBe(false);
  });

  it("accepts a huge timeoutMs (clamped) ", async () => {
    expect(text(await run({ command: "echo ok", timeoutMs: 1e12 }))).toBe("ok\n[exit code 0]");
  });

  it("strips secrets from the environment and sets NO_COLOR, PAGER, TERM", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      DEEPSEEK_API_KEY: "sk-deepseek-secret",
      OPENAI_API_KEY: "sk-openai-secret",
      GITHUB_TOKEN: "ghp-secret",
      DB_PASSWORD: "pw-secret",
      my_secret_thing: "lower-secret",
      HB_VISIBLE_VAR: "visible-value",
      TERM: "xterm-256color",
    });
    try {
      for (const { mode, env: switches } of variants) {
        process.env.HARNESS_BWRAP = switches.HARNESS_BWRAP ?? "";
        const env = text(await run({ command: "env" }, mode));
        expect(env).not.toMatch(/secret/i);
        expect(env).toMatch(/^HB_VISIBLE_VAR=visible-value$/m);
        expect(env).toMatch(/^NO_COLOR=1$/m);
        expect(env).toMatch(/^PAGER=cat$/m);
        expect(env).toMatch(/^TERM=dumb$/m);
      }
      expect(commandEnv({ A_KEY: "x", KEEP: "y" })).toMatchObject({ KEEP: "y" });
      expect(commandEnv({ A_KEY: "x" }).A_KEY).toBeUndefined();
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it("caps huge output keeping head and tail, without buffering it all", async () => {
    const out = await run({ command: "seq 1 2000000; echo THE-END" });
    const t = text(out);
    expect(t.startsWith("1\n2\n3\n4\n")).toBe(true);
    expect(t).toMatch(/1999999\n2000000\nTHE-END\n\[exit code 0\]$/);
    const m = /\[… (\d+) bytes of output cut; showing the first (\d+) and the last (\d+) of (\d+) bytes …\]/.exec(t);
    expect(m).not.toBeNull();
    const [cut, head, tail, total] = m!.slice(1).map(Number);
    expect(head).toBe(BASH_OUTPUT_HEAD_BYTES);
    expect(tail).toBe(BASH_OUTPUT_TAIL_BYTES);
    expect(cut + head + tail).toBe(total);
    expect(total).toBeGreaterThan(14_000_000);
    expect(t.length).toBeLessThan(BASH_OUTPUT_HEAD_BYTES + BASH_OUTPUT_TAIL_BYTES + 500);
  });

  it("kills background jobs when the command finishes", async () => {
    const m = marker();
    const out = await run({ command: `bash -c 'sleep 86400; :' ${m} & sleep 0.3; kill -0 $! && echo started` });
    expect(text(out)).toBe("started\n[exit code 0]");
    expect(await waitFor(() => pidsWith(m).length === 0, 5000)).toBe(true);
  });

  for (const { name, mode, env } of variants) {
    it(`times out and kills the whole group, SIGTERM-ignoring children included (${name})`, async () => {
      Object.assign(process.env, env);
      const m = marker();
      const started = Date.now();
      const out = await run({ command: `${stubborn(m)} echo waiting; wait`, timeoutMs: 1000 }, mode);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(out.isError).toBe(true);
      expect(text(out)).toMatch(/^waiting\n\[timed out after 1 s: the command and every process it started were killed\]$/);
      expect(await waitFor(() => pidsWith(m).length === 0, 6000)).toBe(true);
    }, 20_000);

    it(`returns promptly on abort and kills the group (${name})`, async () => {
      Object.assign(process.env, env);
      const m = marker();
      const ac = new AbortController();
      const p = run({ command: `${stubborn(m)} wait` }, mode, ac.signal);
      expect(await waitFor(() => pidsWith(`${m}-stubborn`, true).length > 0 && pidsWith(`${m}-plain`, true).length > 0, 5000)).toBe(true);
      const t0 = Date.now();
      ac.abort(new Error("cancelled"));
      const out = await p;
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(out.isError).toBe(true);
      expect(text(out)).toMatch(/\[aborted: the command and every process it started were killed\]$/);
      expect(await waitFor(() => pidsWith(m).length === 0, 6000)).toBe(true);
    }, 20_000);
  }

  it("does not start when the signal is already aborted", async () => {
    const ac = new AbortController();
    ac.abort();
    const out = await run({ command: `touch started` }, "full", ac.signal);
    expect(out.isError).toBe(true);
    expect(fs.existsSync(path.join(sb.ws, "started"))).toBe(false);
  });

  it("in full mode is not confined (bash can write outside the workspace)", async () => {
    const out = await run({ command: `echo x > ${JSON.stringify(path.join(sb.outside, "full.txt"))}` }, "full");
    expect(text(out)).toBe("(no output)\n[exit code 0]");
    expect(fs.existsSync(path.join(sb.outside, "full.txt"))).toBe(true);
  });
});

describe("bash in bubblewrap (workspace-write)", () => {
  // bubblewrap is optional (test/tools/sandbox.test.ts says when it must be there); the Landlock
  // confinement's own reaches are test/sandbox/landlock.test.ts's.
  const bwrapHere = findBwrap() !== null || process.env.HARNESS_REQUIRE_BWRAP === "1";
  (bwrapHere ? it : it.skip)("can write the workspace and a private /tmp, not the rest of the file system", async () => {
    const outsideFile = path.join(sb.outside, "escape.txt");
    const varTmpFile = `/var/tmp/hb-escape-${process.pid}-${Date.now()}`;
    const tmpName = `hb-private-${process.pid}-${Date.now()}`;
    try {
      const out = await run(
        {
          command:
            `echo in > inside.txt && cat inside.txt; echo t > /tmp/${tmpName} && echo tmp-ok; ` +
            `echo x > ${JSON.stringify(outsideFile)} || echo refused-1; echo x > ${varTmpFile} || echo refused-2`,
        },
        "workspace-write",
      );
      expect(text(out)).toMatch(/^in\ntmp-ok\n.*\nrefused-1\n.*Read-only file system\nrefused-2\n\[exit code 0\]$/s);
      expect(fs.readFileSync(path.join(sb.ws, "inside.txt"), "utf8")).toBe("in\n");
      expect(fs.existsSync(outsideFile)).toBe(false);
      expect(fs.existsSync(varTmpFile)).toBe(false);
      expect(fs.existsSync(path.join(os.tmpdir(), tmpName))).toBe(false);
    } finally {
      fs.rmSync(varTmpFile, { force: true });
    }
  });

  for (const { name, env } of confined) {
  it(`kills processes that left the process group (setsid) with the sandbox (${name})`, async () => {
    Object.assign(process.env, env);
    const m = marker();
    const ac = new AbortController();
    const p = run({ command: `setsid bash -c 'sleep 86400; :' ${m} & wait` }, "workspace-write", ac.signal);
    expect(await waitFor(() => pidsWith(m, true).length > 0, 5000)).toBe(true);
    ac.abort();
    await p;
    expect(await waitFor(() => pidsWith(m).length === 0, 6000)).toBe(true);
  }, 20_000);
  }
});

describe("bash processes do not outlive a SIGKILLed bridge", () => {
  let bundle: string;
  let dir: string;
  beforeAll(async () => {
    const esbuild = await import("esbuild");
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-bash-bundle-"));
    bundle = path.join(dir, "bash-tool.mjs");
    await esbuild.build({
      entryPoints: [path.resolve(__dirname, "../../src/tools/bash.ts")],
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: bundle,
      logLevel: "silent",
    });
    // The bundle finds the Landlock helper in sandbox/ beside it, as build/harness-bridge.cjs does.
    const helper = path.resolve(__dirname, "../../build/sandbox", `landlock-exec-${process.arch}`);
    fs.mkdirSync(path.join(dir, "sandbox"));
    for (const f of [helper, `${helper}.sha256`]) fs.copyFileSync(f, path.join(dir, "sandbox", path.basename(f)));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const { name, mode, env } of variants) {
    it(`kills the tool's processes within seconds of the parent's SIGKILL (${name})`, async () => {
      const m = marker();
      const script = `
        import { bashTool } from ${JSON.stringify(bundle)};
        await bashTool.execute({ command: ${JSON.stringify(`${stubborn(m)} wait`)} },
          { workspace: ${JSON.stringify(sb.ws)}, permissionMode: ${JSON.stringify(mode)}, signal: new AbortController().signal, sessionId: "s", callId: "c" });
      `;
      // From a file, so that the marker is not in the bridge's own command line.
      const scriptFile = path.join(dir, `bridge-${name.replace(/\W+/g, "-")}.mjs`);
      fs.writeFileSync(scriptFile, script);
      const bridge = spawn(process.execPath, [scriptFile], { stdio: "ignore", env: { ...process.env, ...env } });
      try {
        expect(await waitFor(() => pidsWith(`${m}-stubborn`, true).length > 0 && pidsWith(`${m}-plain`, true).length > 0, 10_000)).toBe(true);
        bridge.kill("SIGKILL");
        expect(await waitFor(() => pidsWith(m).length === 0, 5000)).toBe(true);
      } finally {
        bridge.kill("SIGKILL");
        // If the test failed, leave nothing behind: kill the leftovers' whole process groups.
        for (const pid of pidsWith(m)) {
          try {
            const pgid = Number(fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[2]);
            process.kill(pgid > 1 ? -pgid : pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    }, 30_000);
  }
});

describe("HeadTailBuffer", () => {
  it("keeps everything under the caps and head+tail over them", () => {
    const small = new HeadTailBuffer(4, 4);
    small.push(Buffer.from("abc"));
    small.push(Buffer.from("def"));
    expect(small.text()).toBe("abcdef");
    const big = new HeadTailBuffer(4, 4);
    for (const piece of ["abcd", "e", "fgh", "ijklmnop", "q", "rs"]) big.push(Buffer.from(piece));
    expect(big.cut).toBe(19 - 8);
    expect(big.text()).toBe("abcd\n[… 11 bytes of output cut; showing the first 4 and the last 4 of 19 bytes …]\nopqrs".replace("opqrs", "pqrs"));
  });

  it("does not split UTF-8 characters at the cut", () => {
    const b = new HeadTailBuffer(5, 5);
    b.push(Buffer.from("ééééééééééé")); // 22 bytes
    const t = b.text();
    expect(t).not.toContain("\uFFFD");
    expect(t.startsWith("éé\n")).toBe(true);
    expect(t.endsWith("\néé")).toBe(true);
  });
});
