/**
 * The bash sandbox holds as root and as an unprivileged user (CI runs this file as both), with
 * bubblewrap and with the Landlock confinement (bubblewrap switched off): no capability, no
 * write outside the workspace (a remount does not help), not the bridge's environment, credential
 * stores hidden; without a working sandbox bash fails closed in `workspace-write`; bash is never taken from PATH or the workspace; credentials in
 * the environment (URLs with passwords, proxy and cloud variables) never reach a command.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bashTool } from "../../src/tools/bash.js";
import { commandEnv } from "../../src/sandbox/command-env.js";
import { findBwrap } from "../../src/sandbox/bwrap.js";
import { resetSandboxProbes, sandboxStatus } from "../../src/sandbox/probe.js";
import { sandboxStatusAtStart } from "../../src/sandbox/status.js";
import { RawClient, initParams } from "../support/raw-client.js";
import { makeCtx, makeSandbox, restoreEnv, text } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const savedEnv = { ...process.env };
const homes: string[] = [];
beforeEach(() => {
  sb = makeSandbox();
  resetSandboxProbes();
});
afterEach(() => {
  restoreEnv(savedEnv);
  resetSandboxProbes();
  sb.cleanup();
  for (const h of homes.splice(0)) fs.rmSync(h, { recursive: true, force: true });
});

// bubblewrap is optional for users (Landlock confines bash without it), so a machine without it
// skips the bubblewrap cases, saying so; CI sets HARNESS_REQUIRE_BWRAP=1 and they must run there.
const bwrapHere = findBwrap() !== null || process.env.HARNESS_REQUIRE_BWRAP === "1";
const withBwrap = bwrapHere ? it : it.skip;
const bwrapNote = bwrapHere ? "" : " [skipped: no bubblewrap here, and HARNESS_REQUIRE_BWRAP is not 1]";

const sh = async (command: string, mode: "workspace-write" | "full" = "workspace-write") => {
  const out = await bashTool.execute({ command } as never, makeCtx(sb.ws, mode));
  return { out: text(out), isError: out.isError };
};

describe("the bash sandbox (workspace-write)", () => {
  withBwrap(`is there: CI installs bubblewrap, and a missing one must fail this file there (HARNESS_REQUIRE_BWRAP=1)${bwrapNote}`, async () => {
    expect(findBwrap(), "bubblewrap is required for these tests (apt-get install bubblewrap)").not.toBeNull();
    expect(await sandboxStatus("workspace-write", sb.ws)).toEqual({ bash: "bubblewrap" });
    expect(sandboxStatusAtStart("workspace-write")).toEqual({ bash: "bubblewrap" });
  });

  it("is Landlock with bubblewrap switched off: this kernel has it, and a missing one must fail this file", async () => {
    process.env.HARNESS_BWRAP = "off";
    expect(await sandboxStatus("workspace-write", sb.ws)).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
  });

  withBwrap(`sees no host process under bubblewrap (a PID namespace)${bwrapNote}`, async () => {
    const { out } = await sh(`ls /proc | grep -c '^[0-9]'`);
    // bwrap's init, the shell, ls and grep: the sandbox's own few processes.
    expect(Number(out.split("\n")[0])).toBeLessThan(10);
  });
});

const mechanisms = [
  ...(bwrapHere ? [{ name: "bubblewrap", env: {} }] : []),
  { name: "Landlock", env: { HARNESS_BWRAP: "off" } },
] as const;

describe.each(mechanisms)("the bash sandbox with $name (workspace-write)", ({ name, env }) => {
  beforeEach(() => {
    Object.assign(process.env, env);
  });

  it("is the one in use", async () => {
    expect((await sandboxStatus("workspace-write", sb.ws)).bash).toBe(name === "Landlock" ? "landlock" : "bubblewrap");
  });

  it("holds no capability; a remount or umount gives no way to write outside", async () => {
    const outside = path.join(sb.outside, "escape.txt");
    const { out } = await sh(
      `grep -E 'Cap(Eff|Prm|Amb)' /proc/self/status; mount -o remount,rw / 2>/dev/null && echo REMOUNTED; umount /proc 2>/dev/null && echo UMOUNTED; ` +
        `echo x > ${JSON.stringify(outside)} 2>/dev/null || echo refused; echo in > inside.txt && echo wrote-inside`,
    );
    expect(out).toMatch(/^CapEff:\s+0+$/m);
    expect(out).toMatch(/^CapPrm:\s+0+$/m);
    expect(out).not.toMatch(/REMOUNTED|UMOUNTED/);
    expect(out).toMatch(/^refused$/m);
    expect(out).toMatch(/^wrote-inside$/m);
    expect(fs.existsSync(outside)).toBe(false);
  });

  it("cannot read the bridge's environment or memory", async () => {
    const { out } = await sh(
      `cat /proc/${process.pid}/environ 2>/dev/null || echo no-environ; head -c1 /proc/${process.pid}/mem 2>/dev/null || echo no-mem; ` +
        `cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^PATH=' || true`,
    );
    const [environ, mem, environs] = out.split("\n");
    expect(environ).toBe("no-environ");
    expect(mem).toBe("no-mem");
    // Whatever environ is readable is a sandboxed process's own: the shell, cat, tr, grep.
    expect(Number(environs)).toBeLessThan(10);
    expect(fs.readFileSync(`/proc/${process.pid}/environ`).length).toBeGreaterThan(0); // outside it is readable
  });

  it("hides the credential stores and the paths in HARNESS_SANDBOX_HIDE", async () => {
    // Not under /tmp, which the sandbox replaces anyway: the hiding itself must be what holds.
    const home = fs.mkdtempSync("/var/tmp/hb-sandbox-home-");
    homes.push(home);
    fs.mkdirSync(path.join(home, ".ssh"), { recursive: true });
    fs.writeFileSync(path.join(home, ".ssh", "id_key"), "ssh-canary");
    fs.writeFileSync(path.join(home, ".netrc"), "netrc-canary");
    const extra = path.join(sb.outside, "vault");
    fs.mkdirSync(extra);
    fs.writeFileSync(path.join(extra, "secret"), "extra-canary");
    process.env.HOME = home;
    process.env.HARNESS_SANDBOX_HIDE = extra;
    const { out } = await sh(`cat ${home}/.ssh/id_key ${home}/.netrc ${extra}/secret 2>&1; ls -A ${home}/.ssh`);
    expect(out).not.toMatch(/canary/);
    // Outside the sandbox they are there.
    expect((await sh(`cat ${home}/.ssh/id_key`, "full")).out).toMatch(/ssh-canary/);
  });
});

describe("fail closed", () => {
  it("without bubblewrap and Landlock, bash in workspace-write is refused with both fixes named; full still runs", async () => {
    process.env.HARNESS_BWRAP = "/nonexistent/bwrap";
    process.env.HARNESS_LANDLOCK = "off";
    const refused = await sh("echo ran > ran.txt");
    expect(refused.isError).toBe(true);
    expect(refused.out).toMatch(/bash was not run: .*not found.*HARNESS_LANDLOCK=off.*install bubblewrap.*kernel with Landlock.*permissionMode "full"/s);
    expect(fs.existsSync(path.join(sb.ws, "ran.txt"))).toBe(false);
    expect(await sandboxStatus("workspace-write", sb.ws)).toMatchObject({ bash: "none", reason: expect.stringMatching(/not found/) });
    expect(sandboxStatusAtStart("workspace-write")).toMatchObject({ bash: "none", reason: expect.stringMatching(/not found/) });
    expect((await sh("echo ran", "full")).out).toBe("ran\n[exit code 0]");
  });

  it("with a bubblewrap that cannot make its sandbox, the same, with its error", async () => {
    const fake = path.join(sb.outside, "bwrap");
    fs.writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", { mode: 0o755 });
    process.env.HARNESS_BWRAP = fake;
    process.env.HARNESS_LANDLOCK = "off";
    const refused = await sh("echo ran > ran.txt");
    expect(refused.isError).toBe(true);
    expect(refused.out).toMatch(/No permissions to create new namespace/);
    expect(fs.existsSync(path.join(sb.ws, "ran.txt"))).toBe(false);
  });

  it("with a bubblewrap that cannot make its sandbox (a container), Landlock confines bash instead", async () => {
    const fake = path.join(sb.outside, "bwrap");
    fs.writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", { mode: 0o755 });
    process.env.HARNESS_BWRAP = fake;
    const ran = await sh(`echo ran > ran.txt && echo x > ${JSON.stringify(path.join(sb.outside, "escape"))} || echo refused`);
    expect(ran.out).toMatch(/^refused$/m);
    expect(fs.readFileSync(path.join(sb.ws, "ran.txt"), "utf8")).toBe("ran\n");
    expect(fs.existsSync(path.join(sb.outside, "escape"))).toBe(false);
    expect(await sandboxStatus("workspace-write", sb.ws)).toMatchObject({ bash: "landlock" });
  });
});

describe("bash itself", () => {
  it("is never a `bash` planted in the workspace and found through a relative PATH entry", async () => {
    const planted = path.join(sb.ws, "bash");
    const mark = path.join(sb.outside, "planted-ran");
    fs.writeFileSync(planted, `#!/bin/sh\necho planted > ${JSON.stringify(mark)}\nexec /bin/sh "$@"\n`, { mode: 0o755 });
    process.env.PATH = `.:${process.env.PATH}`;
    for (const mode of ["full", "workspace-write"] as const) {
      expect((await sh("echo real", mode)).out).toBe("real\n[exit code 0]");
    }
    expect(fs.existsSync(mark)).toBe(false);
  });
});

describe("credentials in the environment", () => {
  it("never reach a command: URLs with passwords, proxies with credentials, cloud and auth variables", () => {
    const env = commandEnv({
      http_proxy: "http://user:hunter2@proxy:3128",
      HTTPS_PROXY: "http://u:p@proxy:3128",
      DATABASE_URL: "postgres://app:pw@db/app",
      AWS_ACCESS_KEY_ID: "AKIA-canary",
      AWS_PROFILE: "prod",
      GOOGLE_APPLICATION_CREDENTIALS: "/keys/sa.json",
      SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
      NPM_CONFIG__AUTH: "canary",
      no_proxy: "127.0.0.1",
      HTTP_PROXY_PLAIN: "http://proxy:3128",
      KEEP_ME: "visible",
      DB_PASS: "canary",
      PGPASSFILE: "/home/u/.pgpass",
      GIT_AUTHOR_NAME: "A. Author",
      GIT_AUTHOR_EMAIL: "a@example.test",
      PATH: ".:/usr/local/bin::bin:/usr/bin:",
    });
    for (const gone of ["http_proxy", "HTTPS_PROXY", "DATABASE_URL", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "NPM_CONFIG__AUTH", "DB_PASS", "PGPASSFILE"]) {
      expect(env[gone], gone).toBeUndefined();
    }
    expect(env).toMatchObject({ no_proxy: "127.0.0.1", HTTP_PROXY_PLAIN: "http://proxy:3128", KEEP_ME: "visible", GIT_AUTHOR_NAME: "A. Author", GIT_AUTHOR_EMAIL: "a@example.test" });
    // Relative and empty PATH entries resolve against the working directory, the workspace.
    expect(env.PATH).toBe("/usr/local/bin:/usr/bin");
  });
});

describe("initialize reports the sandbox (through the binary)", () => {
  const init = async (extra: object, env: NodeJS.ProcessEnv = process.env) => {
    const c = new RawClient({ env });
    try {
      c.request(1, "initialize", { ...initParams(sb.ws, "demo"), ...extra });
      return (await c.response(1)).result?.sandbox;
    } finally {
      await c.dispose();
    }
  };
  it("bubblewrap (where it is) in workspace-write, none with a reason in full, read-only and without bwrap and Landlock", async () => {
    if (bwrapHere) expect(await init({})).toEqual({ bash: "bubblewrap" });
    expect(await init({ permissionMode: "full" })).toEqual({ bash: "none", reason: expect.stringMatching(/full/) });
    expect(await init({ permissionMode: "read-only" })).toEqual({ bash: "none", reason: expect.stringMatching(/read-only/) });
    expect(await init({}, { ...process.env, HARNESS_BWRAP: "/nonexistent/bwrap", HARNESS_LANDLOCK: "off" })).toEqual({
      bash: "none",
      reason: expect.stringMatching(/not found.*HARNESS_LANDLOCK=off/),
    });
  });
  it("landlock, with the kernel's ABI, where bubblewrap is switched off", async () => {
    expect(await init({}, { ...process.env, HARNESS_BWRAP: "off" })).toEqual({ bash: "landlock", landlockAbi: expect.any(Number) });
  });
});
