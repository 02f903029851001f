/**
 * The Landlock confinement of bash (bubblewrap switched off), as root and as an unprivileged
 * user (CI runs this file as both): what a command may read and write, what it cannot reach
 * (the bridge, other processes, mount/unshare/ptrace), the helper's own refusals, and a
 * tampered helper on disk never being run.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hideFromSandbox } from "../../src/sandbox/hidden.js";
import { landlockCommand, ruleParts } from "../../src/sandbox/landlock.js";
import { verifiedHelper } from "../../src/sandbox/landlock-helper.js";
import { resetSandboxProbes, sandboxStatus } from "../../src/sandbox/probe.js";
import { bashTool } from "../../src/tools/bash.js";
import { makeCtx, makeSandbox, restoreEnv, text } from "../tools/helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const savedEnv = { ...process.env };
const cleanups: (() => void)[] = [];
beforeEach(() => {
  sb = makeSandbox();
  process.env.HARNESS_BWRAP = "off";
  resetSandboxProbes();
});
afterEach(() => {
  restoreEnv(savedEnv);
  resetSandboxProbes();
  sb.cleanup();
  for (const c of cleanups.splice(0)) c();
});

const sh = async (command: string) => {
  const out = await bashTool.execute({ command } as never, makeCtx(sb.ws, "workspace-write"));
  return { out: text(out), isError: out.isError };
};
const q = JSON.stringify;
/** A home folder outside /tmp with a credential store, a toolchain and a dotfile. */
function fakeHome(): string {
  const home = fs.mkdtempSync("/var/tmp/hb-landlock-home-");
  cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
  fs.mkdirSync(path.join(home, ".ssh"));
  fs.writeFileSync(path.join(home, ".ssh", "id_key"), "ssh-canary");
  fs.mkdirSync(path.join(home, ".cargo", "bin"), { recursive: true });
  fs.writeFileSync(path.join(home, ".cargo", "bin", "tool"), "#!/bin/sh\necho toolchain-ran\n", { mode: 0o755 });
  fs.writeFileSync(path.join(home, ".cargo", "credentials.toml"), "cargo-canary");
  fs.writeFileSync(path.join(home, ".bashrc"), "bashrc-canary");
  // Readable by the unprivileged CI pass too (mkdtemp makes it 0700 for its owner, which is the test's user).
  return home;
}

describe("Landlock confinement (HARNESS_BWRAP=off)", () => {
  it("is what confines bash here", async () => {
    const status = await sandboxStatus("workspace-write", sb.ws);
    expect(status).toMatchObject({ bash: "landlock" });
    expect(status.landlockAbi).toBeGreaterThanOrEqual(1);
  });

  it("writes the workspace and a private TMPDIR (gone afterwards); not beside it, $HOME, /etc, /var/tmp, /tmp", async () => {
    const home = fakeHome();
    process.env.HOME = home;
    const beside = path.join(sb.outside, "beside.txt");
    const varTmp = `/var/tmp/hb-landlock-${process.pid}-${Date.now()}`;
    cleanups.push(() => fs.rmSync(varTmp, { force: true }));
    const { out } = await sh(
      `echo in > inside.txt && cat inside.txt; echo t > "$TMPDIR/t" && echo tmp-ok; echo "tmpdir=$TMPDIR"; ` +
        `for f in ${q(beside)} ${q(path.join(home, "new"))} ${q(path.join(home, ".bashrc"))} /etc/hb-landlock-canary ${q(varTmp)} /tmp/hb-landlock-${process.pid}; do ` +
        `(echo x > "$f") 2>/dev/null && echo "WROTE $f" || echo refused; done; ` +
        `(echo x >> /etc/hostname) 2>/dev/null && echo WROTE-etc || echo refused`,
    );
    expect(out).toMatch(/^in\ntmp-ok\n/);
    expect(out).not.toMatch(/WROTE/);
    expect(out.match(/^refused$/gm)).toHaveLength(7);
    expect(fs.readFileSync(path.join(sb.ws, "inside.txt"), "utf8")).toBe("in\n");
    const tmpdir = /^tmpdir=(.*)$/m.exec(out)![1];
    expect(path.isAbsolute(tmpdir)).toBe(true);
    expect(fs.existsSync(tmpdir)).toBe(false);
    expect(fs.readFileSync(path.join(home, ".bashrc"), "utf8")).toBe("bashrc-canary");
    expect(fs.existsSync("/etc/hb-landlock-canary")).toBe(false);
  });

  it("reads the system and the home toolchains; not the rest of $HOME, credential stores or the session root", async () => {
    const home = fakeHome();
    process.env.HOME = home;
    const sessionRoot = path.join(home, ".local", "state", "harness-bridge");
    fs.mkdirSync(sessionRoot, { recursive: true });
    fs.writeFileSync(path.join(sessionRoot, "log.jsonl"), "session-canary");
    fs.mkdirSync(path.join(home, ".local", "bin"));
    hideFromSandbox(sessionRoot);
    const { out } = await sh(
      `test -r /etc/passwd && ls /usr/bin >/dev/null && echo system-ok; ${q(path.join(home, ".cargo", "bin", "tool"))}; ls ${q(path.join(home, ".local", "bin"))} && echo local-bin-ok; ` +
        `for f in ${q(path.join(home, ".ssh", "id_key"))} ${q(path.join(home, ".cargo", "credentials.toml"))} ${q(path.join(home, ".bashrc"))} ${q(path.join(sessionRoot, "log.jsonl"))}; do cat "$f" 2>/dev/null || echo refused; done; ` +
        `ls ${q(home)} 2>/dev/null || echo refused; cat ${q(path.join(sb.outside, "secret.txt"))} 2>/dev/null || echo refused`,
    );
    expect(out).toMatch(/^system-ok\ntoolchain-ran\nlocal-bin-ok\n/);
    expect(out).not.toMatch(/canary|TOP SECRET/);
    expect(out.match(/^refused$/gm)).toHaveLength(6);
  });

  it("HARNESS_SANDBOX_READ adds folders to read, not to write", async () => {
    const extra = path.join(sb.outside, "extra");
    fs.mkdirSync(extra);
    fs.writeFileSync(path.join(extra, "data"), "extra-data");
    process.env.HARNESS_SANDBOX_READ = extra;
    const { out } = await sh(`cat ${q(path.join(extra, "data"))}; echo; (echo x > ${q(path.join(extra, "new"))}) 2>/dev/null || echo refused`);
    expect(out).toMatch(/^extra-data\nrefused\n/);
    expect(fs.existsSync(path.join(extra, "new"))).toBe(false);
  });

  it("refuses a workspace inside a hidden folder that a folder it reads holds: that rule would show the rest of it", async () => {
    // The session root (hidden) holding the workspace, below a folder HARNESS_SANDBOX_READ adds.
    const extra = path.join(sb.outside, "extra");
    const hidden = path.join(extra, "sessions");
    const ws = path.join(hidden, "ws");
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(hidden, "s.jsonl"), "log-canary");
    process.env.HARNESS_SANDBOX_READ = extra;
    process.env.HARNESS_SANDBOX_HIDE = hidden;
    const out = await bashTool.execute({ command: `cat ${q(path.join(hidden, "s.jsonl"))}; echo ran > ran.txt` } as never, makeCtx(ws, "workspace-write"));
    expect(text(out)).not.toMatch(/canary/);
    expect(out.isError).toBe(true);
    expect(text(out)).toMatch(/bash was not run: .*Landlock cannot hide .*sessions inside the readable .*extra/s);
    expect(fs.existsSync(path.join(ws, "ran.txt"))).toBe(false);
  });

  it("refuses a workspace that holds a credential store (Landlock cannot hide it), running nothing", async () => {
    const home = fakeHome();
    process.env.HOME = home;
    const ws = fs.realpathSync(home);
    const out = await bashTool.execute({ command: "cat .ssh/id_key; echo ran > ran.txt" } as never, makeCtx(ws, "workspace-write"));
    expect(out.isError).toBe(true);
    expect(text(out)).toMatch(/bash was not run: .*workspace holds .*\.ssh.*Landlock cannot hide/s);
    expect(text(out)).not.toMatch(/canary/);
    expect(fs.existsSync(path.join(ws, "ran.txt"))).toBe(false);
  });

  it("no capability, no_new_privs, seccomp; mount, unshare, ptrace and namespaces refused", async () => {
    const python = ["/usr/bin/python3", "/bin/python3"].find((p) => fs.existsSync(p));
    expect(python, "python3 is needed for the ptrace probe").toBeDefined();
    const victim = spawn("sleep", ["60"], { stdio: "ignore" });
    cleanups.push(() => victim.kill("SIGKILL"));
    const ptrace = `import ctypes,os; libc=ctypes.CDLL(None,use_errno=True); r=libc.ptrace(16,${victim.pid},0,0); print('ptrace', r, os.strerror(ctypes.get_errno()))`;
    const { out } = await sh(
      `grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; ` +
        `mount -t tmpfs none ${q(sb.ws)} 2>/dev/null && echo MOUNTED || echo no-mount; unshare -U true 2>/dev/null && echo UNSHARED || echo no-unshare; ` +
        `unshare -m true 2>/dev/null && echo UNSHARED || echo no-unshare; ${python} -c ${q(ptrace)}; ` +
        `cat /proc/${victim.pid}/environ >/dev/null 2>&1 && echo READ-VICTIM || echo no-victim-environ`,
    );
    expect(out).toMatch(/^CapEff:\s+0+$/m);
    expect(out).toMatch(/^CapPrm:\s+0+$/m);
    expect(out).toMatch(/^CapAmb:\s+0+$/m);
    expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(out).toMatch(/^Seccomp:\s+2$/m);
    if (process.getuid?.() === 0) expect(out).toMatch(/^CapBnd:\s+0+$/m);
    expect(out).toMatch(/^no-mount\nno-unshare\nno-unshare\nptrace -1 Operation not permitted\nno-victim-environ$/m);
  });

  it("cannot signal the bridge or another process outside (signal scoping, Landlock ABI 6+)", async () => {
    const abi = (await sandboxStatus("workspace-write", sb.ws)).landlockAbi!;
    const victim = spawn("sleep", ["60"], { stdio: "ignore" });
    cleanups.push(() => victim.kill("SIGKILL"));
    const { out } = await sh(`kill -0 ${process.pid} 2>/dev/null && echo SIGNALLED-BRIDGE || echo no-signal; kill -0 ${victim.pid} 2>/dev/null && echo SIGNALLED || echo no-signal`);
    // Below ABI 6 the kernel has no signal scoping: docs/tools.md lists it as not guaranteed there.
    expect(out).toMatch(abi >= 6 ? /^no-signal\nno-signal\n/ : /^SIGNALLED-BRIDGE\nSIGNALLED\n/);
  });

  it("as root, no chmod or chown of the system's files (uid 0 owns them; Landlock does not govern metadata)", async () => {
    const before = fs.statSync("/etc/passwd").mode;
    const { out } = await sh(`chmod 666 /etc/passwd 2>/dev/null && echo CHMODDED || echo no-chmod; chown 0:0 /etc/passwd 2>/dev/null && echo CHOWNED || echo no-chown`);
    expect(out).toMatch(/^no-chmod\nno-chown\n/);
    expect(fs.statSync("/etc/passwd").mode).toBe(before);
  });
});

describe("the helper itself", () => {
  it("refuses, with status 125 and its reason, to run anything without valid rules", () => {
    const helper = verifiedHelper();
    const mark = path.join(sb.ws, "ran");
    for (const args of [["--", "/bin/sh", "-c", `echo > ${mark}`], ["--rw", "relative", "--", "/bin/true"], ["--bogus"], ["--ro", "/usr"]]) {
      const r = spawnSync(helper, args, { encoding: "utf8" });
      expect(r.status, args.join(" ")).toBe(125);
      expect(r.stderr).toMatch(/^landlock-exec: /m);
    }
    expect(fs.existsSync(mark)).toBe(false);
  });

  it("refuses to start when the bridge it names is not its parent (it died first)", () => {
    const r = spawnSync(verifiedHelper(), ["--parent-pid", "1", "--ro", "/usr", "--", "/bin/true"], { encoding: "utf8" });
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(/bridge that started this is gone/);
  });

  it("is checked before every exec: a helper changed on disk is replaced, never run", async () => {
    // A private folder of this test's own: the uid's shared one serves the other test files too.
    const tmp = fs.mkdtempSync(path.join(sb.outside, "tmp-"));
    process.env.TMPDIR = tmp;
    const helper = verifiedHelper();
    expect(helper.startsWith(`${tmp}/`)).toBe(true);
    const mark = path.join(sb.outside, "tampered-ran");
    fs.chmodSync(helper, 0o700);
    fs.writeFileSync(helper, `#!/bin/sh\necho tampered > ${q(mark)}\nwhile [ "$1" != -- ]; do shift; done; shift; exec "$@"\n`);
    const { out } = await sh(`echo x > ${q(path.join(sb.outside, "escape"))} 2>/dev/null || echo refused`);
    expect(out).toMatch(/^refused$/m);
    expect(fs.existsSync(mark)).toBe(false);
    expect(fs.existsSync(path.join(sb.outside, "escape"))).toBe(false);
    expect(execFileSync("sha256sum", [helper], { encoding: "utf8" })).not.toMatch(/tampered/);
  });
});

// The Python virtual environment on the bridge's PATH is readable: the SDK is installed in one
// (`python3 -m venv ~/venv` on a machine without bubblewrap), its `bin` comes first on PATH, and a
// command's `python3` is that environment's, which reads its `pyvenv.cfg` and `lib` at start. A
// credential store stays unreadable: an environment that holds one is left out.
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

// The environment is made from a Python in the system folders, which commands read: one made from
// a Python elsewhere needs that Python readable too (docs/tools.md), and the suites run with an
// empty HOME, where no home toolchain (~/.pyenv) is.
const systemPython = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => fs.existsSync(p));
const canMakeVenv = process.platform === "linux" && systemPython !== undefined && spawnSync(systemPython, ["-c", "import venv"]).status === 0;

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
    expect(spawnSync(systemPython!, ["-m", "venv", "--without-pip", venv]).status).toBe(0);
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

// A rule names a path the helper opens after the bridge looked at it. A Python environment on
// PATH inside the workspace (an activated project `.venv`) is the model's to replace: swapped for
// a link between the bridge's look and the helper's open, its rule would allow the link's target.
describe.runIf(process.platform === "linux")("a Python environment on PATH inside the workspace, under Landlock", () => {
  it("gets no rule of its own, so a link swapped in for it before the helper starts allows nothing outside", () => {
    const ws = fs.realpathSync(sb.ws);
    const venv = fakeVenv(path.join(ws, ".venv"));
    const secret = path.join(fs.realpathSync(sb.outside), "secret-project");
    fs.mkdirSync(secret);
    fs.writeFileSync(path.join(secret, "key.txt"), "swap-canary");
    const env = { ...process.env, PATH: `${path.join(venv, "bin")}:/usr/bin:/bin`, VIRTUAL_ENV: venv };
    const argv = landlockCommand(ws, undefined, env);
    // The model's command, between the rules and the helper: the environment becomes a link.
    fs.rmSync(venv, { recursive: true });
    fs.symlinkSync(secret, venv);
    const run = spawnSync(argv[0], [...argv.slice(1), "/bin/sh", "-c", `cat ${q(path.join(venv, "key.txt"))} 2>/dev/null || echo refused`], { encoding: "utf8" });
    expect(run.stdout).toBe("refused\n");
    // The environment itself stays usable: the workspace's rule holds it.
    fs.unlinkSync(venv);
    fakeVenv(venv);
    const again = landlockCommand(ws, undefined, env);
    expect(spawnSync(again[0], [...again.slice(1), path.join(venv, "bin", "tool")], { encoding: "utf8" }).stdout).toContain("site-ok");
  });

  it("is judged by its real path: one on PATH by a link's name is readable where it really is", () => {
    const venv = fakeVenv(path.join(sb.outside, "real-venv"));
    const link = path.join(sb.outside, "linked");
    fs.symlinkSync(venv, link);
    expect(ruleParts({ ...process.env, PATH: `${path.join(link, "bin")}:/usr/bin` }).read).toContain(fs.realpathSync(venv));
  });
});
