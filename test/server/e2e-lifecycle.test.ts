/**
 * End to end against the built binary: the process lifecycle — shutdown, end of input,
 * signals, a closed stdout — plus stdout hygiene, logging, running without node on PATH and
 * command-line usage errors.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-life-");
  ws.file("README.md", "# hello\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

/** The kind of stdin and stdout this run of the suite gives the bridge (see the `describe` at the end). */
let pipes = false;

function start(options: ConstructorParameters<typeof RawClient>[0] = {}): RawClient {
  const client = new RawClient({ pipes, ...options });
  clients.push(client);
  return client;
}

async function initialized(model = "demo", options: ConstructorParameters<typeof RawClient>[0] = {}): Promise<RawClient> {
  const c = start(options);
  c.request("init", "initialize", initParams(ws.dir, model));
  expect((await c.response("init")).result).toBeDefined();
  return c;
}

const isEvent = (type: string) => (f: { method?: string; params?: any }) => f.method === "session.event" && f.params.event.type === type;

function expectCleanStdout(c: RawClient): void {
  expect(c.badLines).toEqual([]);
  for (const f of c.frames) expect(f.jsonrpc).toBe("2.0");
}

// Every case twice: on socket pairs, what Node's spawn gives; on pipes, what a Python client's
// subprocess.PIPE gives, where the bridge reads and answers its first request before it makes
// its stdio streams (src/transport/stdio.ts).
describe.each([
  ["socket pairs", false],
  ["pipes", true],
])("on %s", (_kind, mode) => {
  beforeEach(() => {
    pipes = mode;
  });

  describe("shutdown", () => {
    it("aborts an in-flight turn, answers it before {}, refuses later requests with -32003, exits 0", async () => {
      const c = await initialized(ws.script("hang.json", oneTurn({ text: "thinking", hang: true })));
      c.request("p", "session/prompt", promptParams("s"));
      await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
      c.send(
        RawClient.request("bye", "shutdown"),
        RawClient.request("late-prompt", "session/prompt", promptParams("t")),
        RawClient.request("late-init", "initialize", initParams(ws.dir)),
        RawClient.request("late-bye", "shutdown"),
      );
      const bye = await c.response("bye");
      const prompt = await c.response("p");
      expect(bye.result).toEqual({});
      expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
      expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(bye));
      for (const id of ["late-prompt", "late-init", "late-bye"]) {
        expect((await c.response(id)).error).toMatchObject({ code: -32003 });
      }
      expect(await c.exit()).toEqual({ code: 0, signal: null });
      expectCleanStdout(c);
    });

    it("pipelined with initialize and a prompt in one write (the README's three requests), runs the prompt and aborts it", async () => {
      const c = start();
      const script = ws.script("hang.json", oneTurn({ text: "thinking", hang: true }));
      c.send(
        RawClient.request(1, "initialize", initParams(ws.dir, script)),
        RawClient.request(2, "session/prompt", promptParams("piped")),
        RawClient.request(3, "shutdown"),
        RawClient.request(4, "session/prompt", promptParams("late")),
      );
      expect((await c.response(1)).result.protocolVersion).toBe(1);
      const prompt = await c.response(2);
      const bye = await c.response(3);
      expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
      expect(c.events("piped").at(-1).type).toBe("turn/end");
      expect(bye.result).toEqual({});
      expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(bye));
      expect((await c.response(4)).error).toMatchObject({ code: -32003 });
      expect(await c.exit()).toEqual({ code: 0, signal: null });
    });

    it("right behind a second initialize (one write, refused as already initialized), aborts the turn, answers {} and exits 0", async () => {
      // The refused initialize settles at once: the shutdown must not lose track of it meanwhile.
      const c = await initialized(ws.script("hang.json", oneTurn({ text: "thinking", hang: true })));
      c.request("p", "session/prompt", promptParams("s"));
      await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
      c.send(RawClient.request("again", "initialize", initParams(ws.dir)), RawClient.request("bye", "shutdown"));
      expect((await c.response("again")).error).toMatchObject({ code: -32002, data: { kind: "already-initialized" } });
      const bye = await c.response("bye");
      const prompt = await c.response("p");
      expect(bye.result).toEqual({});
      expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
      expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(bye));
      expect(await c.exit()).toEqual({ code: 0, signal: null });
    });

    it("is allowed before initialize and exits 0", async () => {
      const c = start();
      c.request(1, "shutdown");
      expect((await c.response(1)).result).toEqual({});
      expect((await c.exit()).code).toBe(0);
    });
  });

  describe("end of input", () => {
    it("lets an in-flight turn finish, writes its response, then exits 0", async () => {
      const c = start();
      const script = ws.script("slow.json", oneTurn({ text: "slowly but surely", chunkSize: 2, delayMs: 20 }));
      c.send(RawClient.request(1, "initialize", initParams(ws.dir, script)), RawClient.request(2, "session/prompt", promptParams("eof")));
      c.end();
      const res = await c.response(2);
      expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
      const msg = c.events("eof").find((e) => e.type === "assistant/message");
      expect(msg.data.content).toEqual([{ type: "text", text: "slowly but surely" }]);
      expect(await c.exit()).toEqual({ code: 0, signal: null });
    });

    it("keeps the process alive for a turn that waits on nothing, until a signal answers it", async () => {
      const c = start();
      const script = ws.script("hang.json", oneTurn({ text: "waiting", hang: true }));
      c.send(RawClient.request(1, "initialize", initParams(ws.dir, script)), RawClient.request(2, "session/prompt", promptParams("eof-hang")));
      c.end();
      await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
      // Without a hold on the event loop the process would exit 0 here, the prompt unanswered.
      await new Promise((r) => setTimeout(r, 500));
      expect(c.frames.find((f) => f.id === 2)).toBeUndefined();
      c.kill("SIGINT");
      expect(await c.exit()).toEqual({ code: 130, signal: null });
      expect(c.frames.find((f) => f.id === 2)?.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    });

    it.each([
      ["SIGINT", 130],
      ["SIGHUP", 129],
    ] as const)("%s just before EOF still exits %i", async (signal, code) => {
      for (let round = 0; round < 5; round++) {
        const c = await initialized();
        c.kill(signal);
        c.end();
        expect(await c.exit()).toEqual({ code, signal: null });
      }
    });

    it("exits 0 at once on EOF when idle", async () => {
      const c = start();
      c.end();
      expect((await c.exit()).code).toBe(0);
      expect(c.frames).toEqual([]);
    });
  });

  describe("signals", () => {
    it.each([
      ["SIGTERM", 0],
      ["SIGINT", 130],
      ["SIGHUP", 129],
    ] as const)("%s answers the in-flight prompt aborted, then exits %i", async (signal, code) => {
      const c = await initialized(ws.script("hang.json", oneTurn({ text: "waiting", hang: true })));
      c.request("p", "session/prompt", promptParams("sig"));
      await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
      c.kill(signal);
      const exit = await c.exit();
      expect(exit).toEqual({ code, signal: null });
      const prompt = c.frames.find((f) => f.id === "p");
      expect(prompt?.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
      expect(c.events("sig").at(-1).type).toBe("turn/end");
      expectCleanStdout(c);
    });

    it("SIGTERM leaves a synced log whose aborted turn has its turn/end", async () => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
      try {
        const c = await initialized(ws.script("hang.json", oneTurn({ text: "waiting", hang: true })), { args: ["--stdio", "--session-root", root] });
        c.request("p", "session/prompt", promptParams("logged"));
        await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
        c.kill("SIGTERM");
        expect((await c.exit()).code).toBe(0);
        const file = fs.readdirSync(root, { recursive: true }).map(String).find((f) => f.endsWith("logged.jsonl"))!;
        const types = fs
          .readFileSync(path.join(root, file), "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l).type);
        expect(types).toEqual(["session-header", "user/message", "turn/start", "step/start", "assistant/message", "turn/end"]);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    /** Whether the process catches SIGHUP, SIGINT and SIGTERM (its handlers are installed), from /proc. */
    const catchesSignals = (pid: number): boolean => {
      const line = fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("SigCgt:"));
      const caught = BigInt(`0x${line?.split(/\s+/)[1] ?? "0"}`);
      return [1, 2, 15].every((n) => (caught >> BigInt(n - 1)) & 1n);
    };

    it.each([
      ["SIGTERM", 0],
      ["SIGINT", 130],
      ["SIGHUP", 129],
    ] as const)("%s while the start-up still reads the secrets pipe exits %i, not by the signal", async (signal, code) => {
      // The pipe's writer never closes it: the bridge waits for its end (up to 5 s) before serving.
      const c = start({ args: ["--stdio", "--no-session-log", "--secrets-fd", "3"], fd3: { write: "", close: false } });
      const until = Date.now() + 4_000;
      while (Date.now() < until && !catchesSignals(c.child.pid!)) await new Promise((r) => setTimeout(r, 20));
      c.kill(signal);
      expect(await c.exit()).toEqual({ code, signal: null });
      expect(c.frames).toEqual([]);
    });

    it("SIGTERM when idle exits 0", async () => {
      const c = await initialized();
      c.kill("SIGTERM");
      expect((await c.exit()).code).toBe(0);
    });
  });

  describe("a client that stops reading", () => {
    it.each([
      ["shutdown", 0],
      ["SIGTERM", 0],
      ["SIGINT", 130],
    ] as const)("%s still exits (code %i), after the drain deadline at the latest", async (how, code) => {
      const script = ws.script("long.json", oneTurn({ text: "streamed output that fills the pipe ", repeat: 20000, chunkSize: 64 }));
      const c = await initialized(script);
      c.request("p", "session/prompt", promptParams("full"));
      await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
      c.stdout.pause(); // stop reading: the pipe fills and the turn is held by backpressure
      await new Promise((r) => setTimeout(r, 300));
      if (how === "shutdown") c.request("bye", "shutdown");
      else c.kill(how);
      const exit = await c.exit(20_000);
      expect(exit).toEqual({ code, signal: null });
    }, 30_000);
  });

  describe("a closed stdout (EPIPE)", () => {
    async function runUntilClosed(closeStderrToo: boolean): Promise<{ exit: Awaited<ReturnType<RawClient["exit"]>>; logTypes: string[] }> {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
      try {
        const script = ws.script("long.json", oneTurn({ text: "a fairly long line of streamed output ", repeat: 5000, chunkSize: 8, delayMs: 1 }));
        const c = await initialized(script, { args: ["--stdio", "--session-root", root] });
        c.request("p", "session/prompt", promptParams("pipe"));
        await c.waitFrame(isEvent("assistant/chunk"), "a chunk");
        if (closeStderrToo) c.child.stderr.destroy();
        c.stdout.destroy();
        const exit = await c.exit(20_000);
        const file = fs.readdirSync(root, { recursive: true }).map(String).find((f) => f.endsWith("pipe.jsonl"))!;
        const logTypes = fs
          .readFileSync(path.join(root, file), "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l).type);
        return { exit, logTypes };
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    }

    it("aborts the turn (its log ends with turn/end) and exits 0 when the client stops listening", async () => {
      const { exit, logTypes } = await runUntilClosed(false);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(logTypes.slice(-2)).toEqual(["assistant/message", "turn/end"]);
    });

    // With stderr closed as well (the client died), the EPIPE warning written to stderr must not
    // kill the process before the turn is aborted and the log synced.
    it("does the same when stderr is closed too (the client died)", async () => {
      const { exit, logTypes } = await runUntilClosed(true);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(logTypes.slice(-2)).toEqual(["assistant/message", "turn/end"]);
    });
  });

  describe("stdout and stderr", () => {
    it("stdout holds only JSON-RPC frames; logs (debug included) go to stderr", async () => {
      const c = start({ args: ["--stdio", "--no-session-log", "--log-level", "debug"] });
      c.send(
        { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "x" } },
        { jsonrpc: "2.0", id: 77, result: {} },
        RawClient.request(1, "initialize", initParams(ws.dir)),
        RawClient.request(2, "session/prompt", promptParams("clean")),
      );
      await c.response(2);
      c.request(3, "shutdown");
      await c.response(3);
      expect((await c.exit()).code).toBe(0);
      expectCleanStdout(c);
      expect(c.lines.length).toBe(c.frames.length);
      // The ignored frames got no answer...
      expect(c.frames.filter((f) => f.id === 77 || (f.id === null && f.error))).toEqual([]);
      // ...but a debug line on stderr.
      expect(c.stderr).toMatch(/debug: .*notification-shaped/);
      expect(c.stderr).toMatch(/debug: .*response-shaped/);
      for (const line of c.stderr.split("\n").filter(Boolean)) expect(line).toMatch(/^harness-bridge (debug|info|warn|error): /);
    });

    it("at the default log level, nothing is logged for an ordinary session", async () => {
      const c = await initialized();
      c.request(2, "session/prompt", promptParams("quiet"));
      await c.response(2);
      c.end();
      expect((await c.exit()).code).toBe(0);
      expect(c.stderr).toBe("");
    });
  });

  describe("the executable", () => {
    it("runs with no node on PATH and an empty environment", async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "hb-home-"));
      try {
        const c = start({ env: { PATH: "/nonexistent", HOME: home }, cwd: home, args: ["--stdio"] });
        c.send(RawClient.request(1, "initialize", initParams(ws.dir)), RawClient.request(2, "session/prompt", promptParams("nonode")));
        expect((await c.response(2)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
        c.request(3, "shutdown");
        await c.response(3);
        expect((await c.exit()).code).toBe(0);
        // With no --session-root and no XDG_STATE_HOME the log goes under $HOME/.local/state.
        const files = fs.readdirSync(path.join(home, ".local", "state", "harness-bridge"), { recursive: true }).map(String);
        expect(files.some((f) => f.endsWith("nonode.jsonl"))).toBe(true);
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
      }
    });

    it.each([[[]], [["--bogus"]], [["--stdio", "--max-steps", "0"]], [["--stdio", "--log-level", "loud"]]])("exits 2 for a usage error: %j", async (args) => {
      const c = start({ args });
      c.end();
      const exit = await c.exit();
      expect(exit.code).toBe(2);
      expect(c.stderr.length).toBeGreaterThan(0);
      expect(c.frames).toEqual([]);
    });

    it("a session root, HOME or another path variable that is not valid UTF-8 is refused (exit 2), never swapped for another folder", () => {
      // Node reads both with U+FFFD for the invalid byte: the bridge used to make and use that
      // other folder, the same one for /x/\xff and /x/\xfe.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lossy-root-"));
      try {
        const bytes = `${dir}/\\377`;
        const run = (script: string) => spawnSync("/bin/sh", ["-c", script, BINARY], { input: "", encoding: "utf8", timeout: 20_000, env: { ...process.env, HOME: dir } });
        const argv = run(`exec "$0" --stdio --session-root "$(printf '${bytes}')"`);
        const env = run(`HARNESS_SESSION_ROOT="$(printf '${bytes}')" exec "$0" --stdio`);
        for (const [out, named] of [[argv, "--session-root"], [env, "HARNESS_SESSION_ROOT"]] as const) {
          expect(out.status).toBe(2);
          expect(out.stdout).toBe("");
          expect(out.stderr).toContain(named);
          expect(out.stderr).toContain("not valid UTF-8");
        }
        expect(fs.readdirSync(dir)).toEqual([]);
        // Every path the bridge hides, shows, runs or writes by: a HOME or HARNESS_SANDBOX_HIDE
        // read with U+FFFD would hide a folder that does not exist and show the real one.
        for (const name of ["HOME", "XDG_STATE_HOME", "TMPDIR", "HARNESS_SANDBOX_HIDE", "HARNESS_SANDBOX_READ", "HARNESS_BWRAP", "HARNESS_RG"]) {
          const out = run(`${name}="$(printf '${bytes}')" exec "$0" --stdio`);
          expect([out.status, out.stdout], name).toEqual([2, ""]);
          expect(out.stderr).toContain(`error: ${name} `);
          expect(out.stderr).toContain("not valid UTF-8");
        }
        // Given on the command line, the root makes HARNESS_SESSION_ROOT unused: not refused for it.
        const given = run(`HARNESS_SESSION_ROOT="$(printf '${bytes}')" exec "$0" --stdio --session-root "${dir}/ok"`);
        expect(given.status).toBe(0);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it("--version exits 0 and warns of nothing (the single executable's V8 code cache is accepted under its flags)", async () => {
      const c = start({ args: ["--version"] });
      expect((await c.exit()).code).toBe(0);
      expect(c.stderr).toBe("");
    });
  });
});
