/**
 * Under the Landlock confinement a command reads only the folders its rules allow, and the
 * Python virtual environment on the bridge's PATH is one of them: the SDK is installed in one
 * (`python3 -m venv ~/venv` on a machine without bubblewrap), its `bin` comes first on PATH, and
 * a command's `python3` is that environment's, which reads its `pyvenv.cfg` and `lib` at start.
 * A credential store stays unreadable: an environment that holds one is left out.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ruleParts } from "../../src/sandbox/landlock.js";
import { resetSandboxProbes } from "../../src/sandbox/probe.js";
import { bashTool } from "../../src/tools/bash.js";
import { makeCtx, makeSandbox, restoreEnv, text } from "../tools/helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const savedEnv = { ...process.env };
beforeEach(() => {
  sb = makeSandbox();
  process.env.HARNESS_BWRAP = "off";
  resetSandboxProbes();
});
afterEach(() => {
  restoreEnv(savedEnv);
  resetSandboxProbes();
  sb.cleanup();
});

const sh = async (command: string) => {
  const out = await bashTool.execute({ command } as never, makeCtx(sb.ws, "workspace-write"));
  return { out: text(out), isError: out.isError };
};

/** A virtual environment's layout outside every readable folder: bin/tool reads the rest of it, as Python's start does. */
function fakeVenv(dir: string): string {
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.mkdirSync(path.join(dir, "lib"));
  fs.writeFileSync(path.join(dir, "pyvenv.cfg"), "home = /usr/bin\n");
  fs.writeFileSync(path.join(dir, "lib", "site.py"), "site-ok\n");
  const here = JSON.stringify(dir);
  fs.writeFileSync(path.join(dir, "bin", "tool"), `#!/bin/sh\ncat ${here}/pyvenv.cfg ${here}/lib/site.py\n`, { mode: 0o755 });
  return dir;
}

const canMakeVenv = process.platform === "linux" && spawnSync("python3", ["-c", "import venv, ensurepip"]).status === 0;

describe.runIf(process.platform === "linux")("a Python environment on PATH, under Landlock (HARNESS_BWRAP=off)", () => {
  it("is readable by commands: the tool in its bin reads its pyvenv.cfg and lib", async () => {
    const venv = fakeVenv(path.join(sb.outside, "venv"));
    process.env.PATH = `${path.join(venv, "bin")}:${process.env.PATH}`;
    const { out, isError } = await sh("tool; cat ../outside/secret.txt 2>/dev/null || echo outside-refused");
    expect(isError).toBe(false);
    expect(out).toContain("home = /usr/bin\nsite-ok\n");
    expect(out).toContain("outside-refused");
  });

  it("named by VIRTUAL_ENV alone is readable too", async () => {
    const venv = fakeVenv(path.join(sb.outside, "venv"));
    process.env.VIRTUAL_ENV = venv;
    const { out } = await sh(`${JSON.stringify(path.join(venv, "bin", "tool"))}`);
    expect(out).toContain("site-ok");
  });

  it.runIf(canMakeVenv)("runs its python3", async () => {
    const venv = path.join(sb.outside, "venv");
    expect(spawnSync("python3", ["-m", "venv", "--without-pip", venv]).status).toBe(0);
    process.env.PATH = `${path.join(venv, "bin")}:${process.env.PATH}`;
    const { out } = await sh(`python3 -c 'import sys; print("venv-python", sys.prefix != sys.base_prefix)'`);
    expect(out).toContain("venv-python True");
  });

  it("is left out when it holds a credential store, as a home toolchain would be", () => {
    const home = fakeVenv(path.join(sb.outside, "home"));
    fs.mkdirSync(path.join(home, ".ssh"));
    fs.writeFileSync(path.join(home, ".ssh", "id_key"), "ssh-canary");
    const env = { ...process.env, HOME: home, PATH: `${path.join(home, "bin")}:/usr/bin:/bin` };
    const { read } = ruleParts(env);
    expect(read).not.toContain(fs.realpathSync(home));
    const other = fakeVenv(path.join(sb.outside, "other"));
    expect(ruleParts({ ...env, PATH: `${path.join(other, "bin")}:/usr/bin` }).read).toContain(fs.realpathSync(other));
  });
});
