/**
 * A machine that is not ours: a home folder the bridge cannot write (a read-only or missing
 * HOME in a container or a service account), a TMPDIR that cannot hold the Landlock helper.
 * What the user relies on there: an answer that names the folder and the setting that fixes it,
 * not a bare errno.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let tmp: string;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-stock-");
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-stock-home-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function bridge(args: string[], env: NodeJS.ProcessEnv, cwd?: string): RawClient {
  const c = new RawClient({ args, env, cwd });
  clients.push(c);
  return c;
}

describe("a session root the bridge cannot make", () => {
  it("answers the prompt with a session-log error naming the folder and the settings that fix it", async () => {
    // A HOME that cannot hold folders (a regular file: as root too, unlike a read-only mode).
    const home = path.join(tmp, "home");
    fs.writeFileSync(home, "");
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
    delete env.XDG_STATE_HOME;
    delete env.HARNESS_SESSION_ROOT;
    const c = bridge(["--stdio"], env);
    c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", turns([{ text: "one" }]))));
    expect((await c.response("init")).error).toBeUndefined();
    c.request("p", "session/prompt", promptParams("s1"));
    const answer = await c.response("p");
    expect(answer.error?.code).toBe(-32603);
    expect(answer.error?.data).toMatchObject({ kind: "session-log" });
    const message = answer.error!.message;
    expect(message).toContain(path.join(home, ".local", "state", "harness-bridge"));
    expect(message).toContain("--session-root");
    expect(message).toContain("HARNESS_SESSION_ROOT");
    expect(message).toContain("--no-session-log");
  });
});

describe.runIf(process.platform === "linux")("a TMPDIR that cannot hold the Landlock helper", () => {
  it("refuses bash naming TMPDIR as the fix, not another kernel", async () => {
    // Missing here; read-only or full on a real machine: the helper cannot be written either way.
    const env: NodeJS.ProcessEnv = { ...process.env, HARNESS_BWRAP: "off", TMPDIR: path.join(tmp, "gone") };
    delete env.HARNESS_LANDLOCK;
    const c = bridge(["--stdio", "--no-session-log"], env);
    const script = turns([{ toolCalls: [{ name: "bash", arguments: { command: "echo ran" } }] }, { text: "done" }]);
    c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script), { permissionMode: "workspace-write" }));
    const init = await c.response("init");
    expect(init.result?.sandbox?.bash).toBe("none");
    expect(init.result?.sandbox?.reason).toContain(path.join(tmp, "gone"));
    c.request("p", "session/prompt", promptParams("s1"));
    expect((await c.response("p")).result?.status).toBe("ok");
    const results = c.events("s1").filter((e) => e.type === "tool/result");
    expect(results).toHaveLength(1);
    expect(results[0].data.isError).toBe(true);
    const text: string = results[0].data.content[0].text;
    expect(text).toContain(path.join(tmp, "gone"));
    expect(text).toContain("Fix: set TMPDIR to a folder this user can write");
    expect(text).not.toContain("ran\n");
  });
});

describe.runIf(process.platform === "linux")("a relative TMPDIR", () => {
  it("is taken from the bridge's working directory, and bash runs confined by Landlock in the workspace", async () => {
    fs.mkdirSync(path.join(tmp, "reltmp"));
    const env: NodeJS.ProcessEnv = { ...process.env, HARNESS_BWRAP: "off", TMPDIR: "reltmp" };
    delete env.HARNESS_LANDLOCK;
    const c = bridge(["--stdio", "--no-session-log"], env, tmp);
    const script = turns([{ toolCalls: [{ name: "bash", arguments: { command: "echo ran in $PWD" } }] }, { text: "done" }]);
    c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script), { permissionMode: "workspace-write" }));
    expect((await c.response("init")).result?.sandbox?.bash).toBe("landlock");
    c.request("p", "session/prompt", promptParams("s1"));
    expect((await c.response("p")).result?.status).toBe("ok");
    const result = c.events("s1").find((e) => e.type === "tool/result");
    expect(result.data.isError).toBe(false);
    expect(result.data.content[0].text).toContain(`ran in ${fs.realpathSync(ws.dir)}`);
    expect(fs.readdirSync(path.join(tmp, "reltmp"))).toContain(`harness-bridge-${process.getuid!()}`);
  });
});

describe("a session root that cannot be a folder", () => {
  // Each a root no session can live under: the answer is the same `session-log` error at every
  // entry point of the store, naming the folder and the settings, never an errno as internal-error.
  const roots: Record<string, () => { env: NodeJS.ProcessEnv; folder: string }> = {
    "a HOME that is a regular file": () => {
      const home = path.join(tmp, "home");
      fs.writeFileSync(home, "");
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
      delete env.XDG_STATE_HOME;
      delete env.HARNESS_SESSION_ROOT;
      return { env, folder: path.join(home, ".local", "state", "harness-bridge") };
    },
    "a session root under a dangling symlink": () => {
      fs.symlinkSync(path.join(tmp, "nowhere"), path.join(tmp, "link"));
      const root = path.join(tmp, "link", "sessions");
      return { env: { ...process.env, HARNESS_SESSION_ROOT: root }, folder: root };
    },
  };
  for (const [name, make] of Object.entries(roots)) {
    it(`${name}: list, read, fork, delete, rewind, compact and prompt all answer session-log`, async () => {
      const { env, folder } = make();
      const c = bridge(["--stdio"], env);
      c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", turns([{ text: "one" }]))));
      expect((await c.response("init")).error).toBeUndefined();
      const calls: [string, object][] = [
        ["session/list", {}],
        ["session/read", { sessionId: "s1" }],
        ["session/fork", { sessionId: "s1", newSessionId: "s2" }],
        ["session/delete", { sessionId: "s1" }],
        ["session/rewind", { sessionId: "s1", turn: 1 }],
        ["session/compact", { sessionId: "s1" }],
        ["session/prompt", promptParams("s1")],
      ];
      for (const [method, params] of calls) {
        c.request(method, method, params);
        const answer = await c.response(method);
        expect(answer.error?.data, method).toMatchObject({ kind: "session-log" });
        expect(answer.error?.code, method).toBe(-32603);
        expect(answer.error!.message, method).toContain(folder);
        expect(answer.error!.message, method).toContain("--no-session-log");
      }
    });
  }
});

describe.runIf(process.platform === "linux")("a session root inside the workspace, under Landlock", () => {
  for (const made of [false, true]) {
    it(`${made ? "made already" : "not made yet"}: initialize and the turn both refuse bash, naming the session root as the fix`, async () => {
      const root = path.join(ws.dir, ".hb-sessions");
      if (made) fs.mkdirSync(root);
      const env: NodeJS.ProcessEnv = { ...process.env, HARNESS_BWRAP: "off" };
      delete env.HARNESS_LANDLOCK;
      const c = bridge(["--stdio", "--session-root", root], env);
      const script = turns([{ toolCalls: [{ name: "bash", arguments: { command: "echo ran" } }] }, { text: "done" }]);
      c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script), { permissionMode: "workspace-write" }));
      const init = await c.response("init");
      const realRoot = path.join(fs.realpathSync(ws.dir), ".hb-sessions");
      expect(init.result?.sandbox?.bash).toBe("none");
      expect(init.result?.sandbox?.reason).toContain(realRoot);
      c.request("p", "session/prompt", promptParams("s1"));
      expect((await c.response("p")).result?.status).toBe("ok");
      const result = c.events("s1").find((e) => e.type === "tool/result");
      expect(result.data.isError).toBe(true);
      const text: string = result.data.content[0].text;
      expect(text).toContain(realRoot);
      expect(text).toContain("Fix: start the bridge with a session root outside the workspace");
      expect(text).toContain("--no-session-log");
      expect(text).not.toContain("ran\n");
    });
  }
});
