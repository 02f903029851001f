/**
 * MCP servers' lifecycle end to end, through the built binary, with real servers (see
 * e2e-mcp.test.ts): cancellation reaching the server (session/cancel, toolTimeoutMs), a server
 * killed mid-call and restarted once, stdio servers as process groups that die with the bridge
 * (shutdown, end of input, SIGTERM, SIGKILL), and a shutdown that arrives while `initialize`
 * is still connecting servers.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pidsWith } from "../reliability/support/procs.js";
import type { JsonObject } from "../../src/protocol/index.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { EVERYTHING, everything, gone, logged, probe } from "../support/mcp-servers.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let log: string;
const clients: RawClient[] = [];
const strays: number[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-mcp-life-");
  log = path.join(ws.dir, "probe.log");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone, as it should be */
    }
  }
  ws.cleanup();
});

async function initialized(model: string, mcpServers: object, extra: object = {}): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, model, { mcpServers, ...extra }));
  const res = await c.response("init", 30_000);
  expect(res.error).toBeUndefined();
  expect(res.result.mcpServers.every((s: any) => s.status === "connected")).toBe(true);
  return c;
}

const call = (id: string, name: string, args: JsonObject = {}) => ({ id, name, arguments: args });
const text = (result: any): string => result.content.map((b: any) => b.text).join("");

/** Waits for the tool/result of `callId` in session `s`. */
async function resultOf(c: RawClient, callId: string, sessionId = "s"): Promise<any> {
  const frame = await c.waitFrame((f) => f.params?.sessionId === sessionId && f.params?.event?.type === "tool/result" && f.params.event.data.callId === callId, `tool/result ${callId}`, 30_000);
  return frame.params.event.data;
}

/** Whether `pid` descends from `ancestor` (other test files run bridges with the same servers at once). */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let at = pid, hops = 0; at > 1 && hops < 16; hops++) {
    try {
      // The parent is the 4th field of /proc/<pid>/stat, after the command in parentheses.
      at = Number(fs.readFileSync(`/proc/${at}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[1]);
    } catch {
      return false;
    }
    if (at === ancestor) return true;
  }
  return false;
}

describe("cancellation reaches the MCP server", () => {
  it("session/cancel aborts a call that hangs and sends notifications/cancelled", async () => {
    const c = await initialized(ws.script("s.json", oneTurn({ toolCalls: [call("h", "mcp__probe__hang")] }, { text: "never" })), { probe: probe(log) });
    c.request("p", "session/prompt", promptParams("s"));
    await logged(log, /^hang started/);
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    expect((await c.response("p")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    await logged(log, /^hang cancelled/);
  });

  it("past toolTimeoutMs the call is cancelled on the server and answered with an error; the turn goes on", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("h", "mcp__probe__hang")] }, { toolCalls: [call("w", "mcp__probe__whoami")] }, { text: "done" }));
    const c = await initialized(script, { probe: probe(log, { toolTimeoutMs: 1000 }) });
    c.request("p", "session/prompt", promptParams("s"));
    const hang = await resultOf(c, "h");
    expect(hang.isError).toBe(true);
    expect(text(hang)).toContain("within 1000 ms (toolTimeoutMs)");
    await logged(log, /^hang cancelled/);
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
    expect((await resultOf(c, "w")).isError).toBe(false);
  });

  it("cancels server-everything's long-running operation", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("l", "mcp__everything__trigger-long-running-operation", { duration: 600, steps: 600 })] }, { text: "never" }));
    const c = await initialized(script, { everything: everything() });
    c.request("p", "session/prompt", promptParams("s"));
    await c.waitFrame((f) => f.params?.event?.type === "assistant/message", "the tool call");
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("p")).result.status).toBe("aborted");
    const result = c.events("s").find((e) => e.type === "tool/result");
    expect(result.data.isError).toBe(true);
  });
});

describe("a stdio server that dies", () => {
  it("killed mid-call: the call is an error the model reads, the next call restarts it once, after a second death its tools fail", async () => {
    const script = ws.script(
      "s.json",
      oneTurn(
        { toolCalls: [call("pid1", "mcp__probe__whoami")] },
        { toolCalls: [call("h", "mcp__probe__hang")] },
        { toolCalls: [call("pid2", "mcp__probe__whoami")] },
        { toolCalls: [call("h2", "mcp__probe__hang")] },
        { toolCalls: [call("after", "mcp__probe__whoami")] },
        { text: "done" },
      ),
    );
    const c = await initialized(script, { probe: probe(log) });
    c.request("p", "session/prompt", promptParams("s"));
    const first = Number(/^pid (\d+)/.exec(text(await resultOf(c, "pid1")))![1]);
    await logged(log, /^hang started/);
    process.kill(first, "SIGKILL");
    const killed = await resultOf(c, "h");
    expect(killed.isError).toBe(true);
    expect(text(killed)).toContain("the MCP server probe was killed by SIGKILL during this call; the next call starts it again");
    const second = Number(/^pid (\d+)/.exec(text(await resultOf(c, "pid2")))![1]);
    expect(second).not.toBe(first);
    await logged(log, /^hang started/, 2);
    process.kill(second, "SIGKILL");
    expect(text(await resultOf(c, "h2"))).toContain("was killed by SIGKILL during this call");
    const after = await resultOf(c, "after");
    expect(after.isError).toBe(true);
    expect(text(after)).toContain("the MCP server probe is not available (was killed by SIGKILL");
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
  });
});

describe("a third-party server that dies", () => {
  it("server-everything killed during its long-running operation: the call is an error the model reads, the next call restarts it", async () => {
    const script = ws.script(
      "s.json",
      oneTurn(
        { toolCalls: [call("long", "mcp__everything__trigger-long-running-operation", { duration: 600, steps: 600 })] },
        { toolCalls: [call("echo", "mcp__everything__echo", { message: "back" })] },
        { text: "done" },
      ),
    );
    const c = await initialized(script, { everything: everything() });
    const ours = () => pidsWith(EVERYTHING).filter((pid) => descendsFrom(pid, c.child.pid!));
    const [first] = ours();
    expect(first).toBeGreaterThan(0);
    c.request("p", "session/prompt", promptParams("s"));
    // The call is in flight once the model's message with it is recorded.
    await c.waitFrame((f) => f.params?.event?.type === "assistant/message", "the long call");
    process.kill(first, "SIGKILL");
    const killed = await resultOf(c, "long");
    expect(killed.isError).toBe(true);
    // The server's last words (its stderr) are part of the message.
    expect(text(killed)).toMatch(/^the MCP server everything was killed by SIGKILL.* during this call; the next call starts it again/s);
    const echoed = await resultOf(c, "echo");
    expect(echoed).toMatchObject({ isError: false, content: [{ type: "text", text: "Echo: back" }] });
    expect((await c.response("p", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const now = ours();
    expect(now).not.toContain(first);
    expect(now.length).toBeGreaterThan(0);
  });
});

describe("stdio servers die with the bridge, helpers included", () => {
  // The exit code of each way out (shared/PROTOCOL.md "Exit codes"); SIGKILL's is the signal's.
  const EXIT = { shutdown: 0, "end of input": 0, SIGTERM: 0, SIGINT: 130, SIGHUP: 129 } as const;
  it.each(["shutdown", "end of input", "SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"] as const)("after %s no process of the server's group is left", async (how) => {
    const script = ws.script("s.json", turns([{ toolCalls: [call("w", "mcp__probe__whoami"), call("k", "mcp__probe__helper")] }, { text: "done" }]));
    const c = await initialized(script, { probe: probe(log), everything: everything() });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
    const server = Number(/^pid (\d+)/.exec(text(await resultOf(c, "w")))![1]);
    const helper = Number(/^helper (\d+)/.exec(text(await resultOf(c, "k")))![1]);
    strays.push(server, helper);
    if (how === "shutdown") c.request("bye", "shutdown");
    else if (how === "end of input") c.end();
    else c.kill(how);
    const exit = await c.exit(20_000);
    if (how !== "SIGKILL") expect(exit).toEqual({ code: EXIT[how], signal: null });
    await gone(server);
    await gone(helper);
  });

  it("a shutdown ends the server's helpers that left its process group (setsid), one that ignores SIGTERM included, though the bridge exits before the grace", async () => {
    const pidFile = path.join(ws.dir, "helpers");
    const stubborn = `process.on("SIGTERM", () => {}); setInterval(() => {}, 1000);`;
    const server = [
      `const { spawn } = require("node:child_process");`,
      `const pids = [spawn("sleep", ["1000"], { detached: true, stdio: "ignore" }).pid, spawn(process.execPath, ["-e", ${JSON.stringify(stubborn)}], { detached: true, stdio: "ignore" }).pid];`,
      `require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, pids.join(" "));`,
      `setInterval(() => {}, 1000);`,
    ].join("\n");
    const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
    clients.push(c);
    // The server never answers `initialize`: it runs, with its helpers, until the shutdown.
    c.request("init", "initialize", initParams(ws.dir, "demo", { mcpServers: { detaching: { command: process.execPath, args: ["-e", server], startupTimeoutMs: 600_000 } } }));
    const until = Date.now() + 15_000;
    while (!fs.existsSync(pidFile) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200)); // the stubborn helper sets its SIGTERM handler
    const pids = fs.readFileSync(pidFile, "utf8").split(" ").map(Number);
    expect(pids).toHaveLength(2);
    strays.push(...pids);
    c.request("bye", "shutdown");
    expect((await c.response("init")).result.mcpServers[0].status).toBe("failed");
    expect(await c.exit()).toEqual({ code: 0, signal: null });
    for (const pid of pids) await gone(pid);
  });

  it("a shutdown while initialize still connects servers stops them: initialize answers (the server failed), then shutdown, exit 0", async () => {
    const marker = `${900 + Math.floor(Math.random() * 99)}.${process.pid}`;
    const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, "demo", { mcpServers: { silent: { command: "sleep", args: [marker], startupTimeoutMs: 600_000 } } }));
    // The server is running (initialize waits for it), then the shutdown comes.
    const until = Date.now() + 15_000;
    while (pidsWith(marker).length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const pids = pidsWith(marker);
    expect(pids.length).toBeGreaterThan(0);
    strays.push(...pids);
    c.request("bye", "shutdown");
    const init = await c.response("init");
    expect(init.result.mcpServers).toEqual([{ name: "silent", status: "failed", tools: [], error: "the bridge shut down while it connected" }]);
    expect((await c.response("bye")).result).toEqual({});
    expect(c.indexOf(init)).toBeLessThan(c.frames.findIndex((f) => f.id === "bye"));
    expect(await c.exit()).toEqual({ code: 0, signal: null });
    for (const pid of pids) await gone(pid);
  });
});
