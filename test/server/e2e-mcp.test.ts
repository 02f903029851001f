/**
 * MCP servers end to end, through the built binary, with real servers: the reference servers
 * from npm (server-everything, server-filesystem) over stdio and server-everything's streamable
 * HTTP mode on 127.0.0.1, and a probe written with the `mcp` Python package. The scripted model
 * calls `mcp__…` tools. Here: `initialize.mcpServers` (names, statuses, failures that do not fail
 * initialize), results (text, errors, other content), `read-only` mode, approvals,
 * tools/list_changed. Lifecycle (cancel, timeouts, crashes, process groups): e2e-mcp-lifecycle.
 */
import type { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/protocol/index.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { deadPort, everything, everythingOverHttp, filesystem, logged, probe } from "../support/mcp-servers.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let log: string;
const clients: RawClient[] = [];
const servers: ChildProcess[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-mcp-");
  log = path.join(ws.dir, "probe.log");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const s of servers.splice(0)) s.kill("SIGKILL");
  ws.cleanup();
});

function start(args: string[] = []): RawClient {
  const c = new RawClient({ args: ["--stdio", "--no-session-log", ...args] });
  clients.push(c);
  return c;
}

async function initialized(model: string, mcpServers: object, extra: object = {}, args: string[] = []): Promise<{ c: RawClient; result: any }> {
  const c = start(args);
  c.request("init", "initialize", initParams(ws.dir, model, { mcpServers, ...extra }));
  const res = await c.response("init", 30_000);
  expect(res.error).toBeUndefined();
  return { c, result: res.result };
}

/** Runs one prompt to its response; returns the tool/result events of that session by call id. */
async function prompt(c: RawClient, sessionId = "s", id: string | number = `p-${sessionId}`): Promise<{ response: any; results: Record<string, any> }> {
  c.request(id, "session/prompt", promptParams(sessionId));
  const response = await c.response(id, 30_000);
  const results: Record<string, any> = {};
  for (const e of c.events(sessionId)) if (e.type === "tool/result") results[e.data.callId] = e.data;
  return { response, results };
}

const text = (result: any): string => result.content.map((b: any) => b.text).join("");
const call = (id: string, name: string, args: JsonObject = {}) => ({ id, name, arguments: args });

describe("initialize.mcpServers", () => {
  it("connects every server in parallel, reports each one's tools, and a failed server fails neither initialize nor the bridge", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("e", "mcp__everything__echo", { message: "hi" }), call("m", "mcp__missing__anything")] }, { text: "done" }));
    const { c, result } = await initialized(script, {
      everything: everything(),
      fs: filesystem(ws.dir),
      silent: { command: "sleep", args: ["1000"], startupTimeoutMs: 500 },
      missing: { command: "no-such-mcp-server-here" },
      nowhere: { command: process.execPath, cwd: "no-such-folder" },
    });
    const byName = Object.fromEntries(result.mcpServers.map((s: any) => [s.name, s]));
    expect(result.mcpServers.map((s: any) => s.name)).toEqual(["everything", "fs", "silent", "missing", "nowhere"]);
    expect(byName.everything).toMatchObject({ status: "connected" });
    expect(byName.everything.tools).toEqual(expect.arrayContaining(["mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__trigger-long-running-operation"]));
    expect(byName.fs.status).toBe("connected");
    expect(byName.fs.tools).toContain("mcp__fs__read_text_file");
    expect(byName.silent).toEqual({ name: "silent", status: "failed", tools: [], error: expect.stringContaining("within 500 ms (startupTimeoutMs)") });
    expect(byName.missing).toMatchObject({ status: "failed", tools: [], error: expect.stringMatching(/exited with code 127.*not found/) });
    expect(byName.nowhere).toMatchObject({ status: "failed", error: `could not start: its cwd ${path.join(ws.dir, "no-such-folder")} is not a directory` });
    const { response, results } = await prompt(c);
    expect(response.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(results.e).toMatchObject({ name: "mcp__everything__echo", isError: false, content: [{ type: "text", text: "Echo: hi" }] });
    // The model reads why a failed server's tools are not there.
    expect(results.m.isError).toBe(true);
    expect(text(results.m)).toMatch(/^unknown tool 'mcp__missing__anything' \(the MCP server missing is not available: exited with code 127/);
  });

  it.each([
    ["a server name with an underscore", { my_server: everything() }, "params.mcpServers"],
    ["a server name of 33 characters", { ["s".repeat(33)]: everything() }, "params.mcpServers"],
    ["33 servers", Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`s${i}`, everything()])), "at most 32 servers"],
    ["both a command and a url", { x: { command: "node", url: "http://127.0.0.1:1/mcp" } }, "params.mcpServers.x"],
    ["a url that is not http", { x: { url: "file:///etc/passwd" } }, "params.mcpServers.x"],
    ["a zero startupTimeoutMs", { x: { command: "node", startupTimeoutMs: 0 } }, "params.mcpServers.x"],
  ])("refuses %s with -32602 naming the field, and a corrected initialize succeeds", async (_what, mcpServers, words) => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir, "demo", { mcpServers }));
    const res = await c.response(1);
    expect(res.error?.code).toBe(-32602);
    expect(res.error?.message).toContain(words);
    c.request(2, "initialize", initParams(ws.dir, "demo", { mcpServers: {} }));
    expect((await c.response(2)).result).toMatchObject({ protocolVersion: 1, mcpServers: [] });
  });

  it("a client that asks for no MCP servers sees no mcpServers field", async () => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir, "demo"));
    expect((await c.response(1)).result).not.toHaveProperty("mcpServers");
  });
});

describe("MCP tool results", () => {
  it("keeps text, describes other content, honours isError, and reads a workspace file through server-filesystem", async () => {
    ws.file("notes.txt", "the notes of the workspace\n");
    const script = ws.script(
      "s.json",
      oneTurn(
        {
          toolCalls: [
            call("sum", "mcp__everything__get-sum", { a: 2, b: 3 }),
            call("structured", "mcp__everything__get-structured-content", { location: "Chicago" }),
            call("img", "mcp__everything__get-tiny-image"),
            call("link", "mcp__everything__get-resource-links", { count: 1 }),
            call("bad-args", "mcp__everything__echo", { message: 42 }),
            call("fail", "mcp__probe__fail", { why: "testing" }),
            call("read", "mcp__fs__read_text_file", { path: path.join(ws.dir, "notes.txt") }),
            call("outside", "mcp__fs__read_text_file", { path: "/etc/hostname" }),
          ],
        },
        { text: "done" },
      ),
    );
    const { c } = await initialized(script, { everything: everything(), probe: probe(log), fs: filesystem(ws.dir) });
    const { response, results } = await prompt(c);
    expect(response.result.status).toBe("ok");
    expect(results.sum).toMatchObject({ isError: false });
    expect(text(results.sum)).toContain("5");
    // A result checked against the tool's output schema (zod's, as the server's SDK writes it) passes.
    expect(results.structured).toMatchObject({ isError: false });
    expect(text(results.structured)).toContain("temperature");
    expect(text(results.img)).toMatch(/\[image: image\/png, \d+ bytes, not shown\]/);
    expect(text(results.link)).toMatch(/\[resource link: \S+/);
    expect(results["bad-args"].isError).toBe(true);
    expect(results.fail).toMatchObject({ isError: true });
    expect(text(results.fail)).toContain("failing on purpose: testing");
    expect(results.read).toMatchObject({ isError: false, content: [{ type: "text", text: "the notes of the workspace\n" }] });
    expect(results.outside.isError).toBe(true);
    expect(text(results.outside)).toMatch(/denied|outside|not allowed/i);
  });

  it("speaks streamable HTTP to server-everything on 127.0.0.1", async () => {
    const { server, port } = await everythingOverHttp();
    servers.push(server);
    const dead = await deadPort();
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("e", "mcp__web__echo", { message: "over http" })] }, { text: "done" }));
    const { c, result } = await initialized(script, { web: { url: `http://127.0.0.1:${port}/mcp` }, dead: { url: `http://127.0.0.1:${dead.port}/mcp` } }).finally(dead.close);
    expect(result.mcpServers[0]).toMatchObject({ name: "web", status: "connected", tools: expect.arrayContaining(["mcp__web__echo"]) });
    expect(result.mcpServers[1]).toMatchObject({ name: "dead", status: "failed", error: expect.stringMatching(/could not start/) });
    const { results } = await prompt(c);
    expect(results.e).toMatchObject({ isError: false, content: [{ type: "text", text: "Echo: over http" }] });
  });
});

describe("MCP tools, permission modes and approvals", () => {
  it("read-only mode offers only the tools the server annotates readOnlyHint", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("w", "mcp__probe__whoami"), call("n", "mcp__probe__note", { text: "x" })] }, { text: "done" }));
    const { c } = await initialized(script, { probe: probe(log) }, { permissionMode: "read-only" });
    const { results } = await prompt(c);
    expect(results.w.isError).toBe(false);
    expect(text(results.w)).toMatch(/^pid \d+/);
    expect(results.n.isError).toBe(true);
    expect(text(results.n)).toContain("unknown tool 'mcp__probe__note' (not offered in read-only mode: the MCP server probe does not annotate it readOnlyHint)");
    expect(text(results.n)).toContain("mcp__probe__whoami");
    expect(fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "").not.toContain("note");
  });

  it("approvals 'writes' asks before a tool without readOnlyHint, not before a read-only one", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("w", "mcp__probe__whoami")] }, { toolCalls: [call("n", "mcp__probe__note", { text: "approved" })] }, { text: "done" }));
    const { c } = await initialized(script, { probe: probe(log) }, { approvals: "writes" });
    c.request("p", "session/prompt", promptParams("s"));
    const request = await c.waitFrame((f) => f.params?.event?.type === "permission/request", "permission/request");
    expect(request.params.event.data).toMatchObject({ callId: "n", name: "mcp__probe__note" });
    expect(c.events("s").filter((e) => e.type === "permission/request")).toHaveLength(1);
    c.request("a", "session/permission", { sessionId: "s", requestId: request.params.event.data.requestId, decision: "allow" });
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
    await logged(log, /^note approved$/);
  });
});

describe("MCP tools under approvals 'always'", () => {
  it("asks before a read-only tool too, and a deny is the error result the model reads; the server never sees the call", async () => {
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("w", "mcp__probe__whoami")] }, { toolCalls: [call("n", "mcp__probe__note", { text: "never" })] }, { text: "done" }));
    const { c } = await initialized(script, { probe: probe(log) }, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const first = await c.waitFrame((f) => f.params?.event?.type === "permission/request", "permission/request");
    expect(first.params.event.data).toMatchObject({ callId: "w", name: "mcp__probe__whoami" });
    c.request("a1", "session/permission", { sessionId: "s", requestId: first.params.event.data.requestId, decision: "allow" });
    const second = await c.waitFrame((f) => f.params?.event?.type === "permission/request" && f.params.event.data.callId === "n", "permission/request n");
    c.request("a2", "session/permission", { sessionId: "s", requestId: second.params.event.data.requestId, decision: "deny", message: "not now" });
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
    const results = Object.fromEntries(c.events("s").filter((e) => e.type === "tool/result").map((e) => [e.data.callId, e.data]));
    expect(results.w.isError).toBe(false);
    expect(results.n.isError).toBe(true);
    expect(text(results.n)).toContain("not now");
    expect(fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "").not.toMatch(/^note never$/m);
  });
});

describe("tools/list_changed", () => {
  it("refreshes the tool set: a turn keeps the tools it started with, the next turn sees the new ones", async () => {
    const script = ws.script(
      "s.json",
      turns([{ toolCalls: [call("g", "mcp__probe__grow")] }, { toolCalls: [call("early", "mcp__probe__extra")] }, { text: "one" }], [{ toolCalls: [call("late", "mcp__probe__extra")] }, { text: "two" }]),
    );
    const { c, result } = await initialized(script, { probe: probe(log) });
    expect(result.mcpServers[0].tools).not.toContain("mcp__probe__extra");
    const first = await prompt(c, "s", "p1");
    expect(text(first.results.g)).toBe("grown");
    expect(first.results.early.isError).toBe(true);
    // Whether the new list has arrived by then or not, this turn keeps the tools it started with.
    expect(text(first.results.early)).toMatch(/^unknown tool 'mcp__probe__extra' \(the MCP server probe (added it during this turn; it is offered from the next turn|has no such tool)\)/);
    const second = await prompt(c, "s", "p2");
    expect(second.results.late).toMatchObject({ isError: false, content: [{ type: "text", text: "extra here" }] });
  });

  it("tools/list_changed makes one listing at a time, and those that come during a listing make one more, not one each", async () => {
    // The probe's flood sends one notification, holds the listing it brings until it has sent
    // 199 more, then lets it answer; each tools/list logs how many were in flight as it arrived
    // and how many notifications came before it.
    const script = ws.script("s.json", turns([{ toolCalls: [call("f", "mcp__probe__flood", { times: 200 })] }, { text: "one" }], [{ toolCalls: [call("w", "mcp__probe__whoami")] }, { text: "two" }]));
    const { c } = await initialized(script, { probe: probe(log) }, {}, ["--log-level", "info"]);
    expect(text((await prompt(c, "s", "p1")).results.f)).toBe("sent 200");
    // The turn after the flood starts once the listings it brought are done.
    expect((await prompt(c, "s", "p2")).results.w.isError).toBe(false);
    const listings = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.startsWith("tools/list:"));
    expect(listings).toEqual([
      "tools/list: 1 in flight, after 0 notifications", // at start
      "tools/list: 1 in flight, after 1 notifications", // the flood's first
      "tools/list: 1 in flight, after 200 notifications", // the one more for the 199 during it
    ]);
  });
});
