/**
 * The session lock (src/agent/store/lock.ts) against what an attacker or an accident leaves
 * in the session root, through the built binary: a lock file that is a symlink, a folder or a
 * FIFO; one that is empty, corrupt, or dated in the future; owners that cannot be processes
 * (pid 0, -1, past pid_t); a live process that is no bridge; the bridge's own pid in a lock it
 * does not hold; a session folder the bridge may not write. Each gets a specific answer — never
 * a crash, a hang, a followed link or a live lock taken — and the bridge goes on serving.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { BINARY, RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { lockLetGo } from "../support/session-locks.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];
const strays: ChildProcess[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-lock-attack-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lock-attack-root-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const child of strays.splice(0)) child.kill("SIGKILL");
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const folder = () => path.join(root, workspaceFolderName(ws.dir));
const lockFile = () => path.join(folder(), "s.lock");
const startOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
};
const ownerLine = (pid: number, start = "") => `${JSON.stringify({ pid, start, host: os.hostname() })}\n`;
const age = (file: string, ms: number) => fs.utimesSync(file, new Date(Date.now() + ms), new Date(Date.now() + ms));

let nextId = 0;
function send(c: RawClient, method: string, params?: object): Promise<Frame> {
  const id = `r${++nextId}`;
  c.request(id, method, params);
  return c.response(id, 20_000);
}

/** A bridge on `root` whose session `s` has one turn in its log already (and no lock: the turn ended, and its linger). */
async function bridgeWithSession(options: { command?: string; args?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<RawClient> {
  const script = ws.script("s.json", turns(...Array.from({ length: 6 }, (_, i) => [{ text: `answer ${i + 1}` }])));
  const c = new RawClient({ command: options.command, args: [...(options.args ?? []), ...(options.command ? [BINARY] : []), "--stdio", "--session-root", root], env: options.env });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script));
  expect((await c.response("init", 20_000)).error).toBeUndefined();
  expect((await send(c, "session/prompt", promptParams("s", "first"))).result?.status).toBe("ok");
  await lockLetGo(lockFile());
  return c;
}

/** The session still serves: read works, and (once `lockFile` is cleared) a prompt runs. */
async function stillServes(c: RawClient): Promise<void> {
  expect((await send(c, "session/read", { sessionId: "s" })).result.events.length).toBeGreaterThan(0);
  fs.rmSync(lockFile(), { recursive: true, force: true });
  expect((await send(c, "session/prompt", promptParams("s", "after"))).result).toEqual({ status: "ok", reason: { kind: "completed" } });
  expect(c.child.exitCode).toBeNull();
}

const expectSessionLog = (frame: Frame, words: string) => {
  expect(frame.error, JSON.stringify(frame)).toMatchObject({ code: -32603, data: { kind: "session-log" } });
  expect(frame.error!.message).toContain(words);
  expect(frame.error!.message).toContain(lockFile());
};
const expectLocked = (frame: Frame, words: string) => {
  expect(frame.error, JSON.stringify(frame)).toMatchObject({ code: -32001, data: { kind: "session-locked", sessionId: "s" } });
  expect(frame.error!.message).toContain(words);
};

describe("a lock file that no bridge made", () => {
  it("a symlink (to a file, or dangling) is refused as such: not followed, not removed, its target untouched", async () => {
    const c = await bridgeWithSession();
    const target = ws.file("precious.txt", "keep me\n");
    fs.symlinkSync(target, lockFile());
    expectSessionLog(await send(c, "session/prompt", promptParams("s", "x")), "is a symbolic link, which no bridge makes");
    expect(fs.readFileSync(target, "utf8")).toBe("keep me\n");
    expect(fs.lstatSync(lockFile()).isSymbolicLink()).toBe(true);
    fs.rmSync(lockFile());
    const nowhere = path.join(ws.dir, "nowhere");
    fs.symlinkSync(nowhere, lockFile());
    expectSessionLog(await send(c, "session/delete", { sessionId: "s" }), "is a symbolic link");
    expect(fs.existsSync(nowhere)).toBe(false);
    await stillServes(c);
  });

  it("a folder and a FIFO are refused as such, at once (no read that waits on the FIFO), and left as they are", async () => {
    const c = await bridgeWithSession();
    fs.mkdirSync(lockFile());
    fs.writeFileSync(path.join(lockFile(), "inside"), "x");
    expectSessionLog(await send(c, "session/prompt", promptParams("s", "x")), "is a folder");
    expect(fs.readdirSync(lockFile())).toEqual(["inside"]);
    fs.rmSync(lockFile(), { recursive: true });
    execFileSync("mkfifo", [lockFile()]);
    age(lockFile(), -60_000);
    expectSessionLog(await send(c, "session/prompt", promptParams("s", "x")), "is not a regular file (a FIFO, socket or device)");
    expect(fs.lstatSync(lockFile()).isFIFO()).toBe(true);
    await stillServes(c);
  });
});

describe("a lock file without a usable owner", () => {
  it("empty and fresh is session-locked for the grace, saying it names no owner; 60 s old it is taken over", async () => {
    const c = await bridgeWithSession();
    fs.writeFileSync(lockFile(), "");
    expectLocked(await send(c, "session/prompt", promptParams("s", "x")), "names no owner yet");
    age(lockFile(), -60_000);
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result?.status).toBe("ok");
    await lockLetGo(lockFile()); // taken over, and let go after the turn
  });

  it("corrupt and dated an hour ahead is not young for good: taken over", async () => {
    const c = await bridgeWithSession();
    fs.writeFileSync(lockFile(), "garbage\n");
    age(lockFile(), 3_600_000);
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result?.status).toBe("ok");
  });

  it.each([
    ["pid 0 (kill's own process group)", 0],
    ["pid -1 (every process to kill)", -1],
    ["a pid past pid_t", 2 ** 40],
  ])("%s names no owner: never reported as that process, taken over after the grace", async (_what, pid) => {
    const c = await bridgeWithSession();
    fs.writeFileSync(lockFile(), ownerLine(pid));
    const fresh = await send(c, "session/prompt", promptParams("s", "x"));
    expectLocked(fresh, "names no owner yet");
    expect(fresh.error!.message).not.toContain(`process ${pid}`);
    age(lockFile(), -60_000);
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result?.status).toBe("ok");
  });
});

describe("a lock naming a live process", () => {
  it("that is no bridge: session-locked naming its command, the lock kept; once that process is gone it is taken over", async () => {
    const c = await bridgeWithSession();
    const sleeper = spawn("sleep", ["1000"], { stdio: "ignore" });
    strays.push(sleeper);
    fs.writeFileSync(lockFile(), ownerLine(sleeper.pid!, startOf(sleeper.pid!)));
    expectLocked(await send(c, "session/prompt", promptParams("s", "x")), `process ${sleeper.pid} (command "sleep")`);
    expect(fs.readFileSync(lockFile(), "utf8")).toBe(ownerLine(sleeper.pid!, startOf(sleeper.pid!)));
    sleeper.kill("SIGKILL");
    await new Promise((r) => sleeper.once("exit", r));
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result?.status).toBe("ok");
  });

  it("that is the bridge itself, which does not hold it (a copy or a forgery): taken over", async () => {
    const c = await bridgeWithSession();
    fs.writeFileSync(lockFile(), ownerLine(c.child.pid!, startOf(c.child.pid!)));
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    await lockLetGo(lockFile()); // taken over, and let go after the turn
  });
});

describe("a session folder the bridge may not write", () => {
  // Root writes anywhere: the bridge runs as `nobody` there (as .ci/run runs the sandbox tests).
  const asRoot = process.getuid?.() === 0;
  const nobody = asRoot ? Number(execFileSync("id", ["-u", "nobody"]).toString().trim()) : undefined;
  it("a prompt is session-log 'cannot create … lock file …: EACCES', reads still work, and the bridge serves on", async () => {
    let options = {};
    if (asRoot) {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lock-attack-home-"));
      for (const dir of [ws.dir, root, home]) execFileSync("chown", ["-R", `${nobody}:${nobody}`, dir]);
      options = { command: "setpriv", args: [`--reuid=${nobody}`, `--regid=${nobody}`, "--clear-groups"], env: { ...process.env, HOME: home, TMPDIR: home } };
    }
    const c = await bridgeWithSession(options);
    fs.chmodSync(folder(), 0o500);
    const refused = await send(c, "session/prompt", promptParams("s", "x"));
    expectSessionLog(refused, "cannot create session s's lock file");
    expect(refused.error!.message).toContain("EACCES (permission denied)");
    expect((await send(c, "session/read", { sessionId: "s" })).result.events.length).toBeGreaterThan(0);
    // A stale lock (its owner gone) in that folder cannot be moved away: said so, not a raw errno.
    fs.chmodSync(folder(), 0o700);
    fs.writeFileSync(lockFile(), ownerLine(2 ** 31 - 1, "1"));
    fs.chmodSync(folder(), 0o500);
    expectSessionLog(await send(c, "session/prompt", promptParams("s", "x")), "cannot take over session s's lock file");
    fs.chmodSync(folder(), 0o700);
    if (asRoot) {
      // Another user's lock the bridge may not even read: named, with its errno.
      fs.chmodSync(lockFile(), 0o600);
      expectSessionLog(await send(c, "session/prompt", promptParams("s", "x")), "cannot read session s's lock file");
    }
    fs.rmSync(lockFile());
    expect((await send(c, "session/prompt", promptParams("s", "x"))).result?.status).toBe("ok");
  });
});
