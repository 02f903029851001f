/**
 * Hostile or broken MCP servers end to end, through the built binary, with a hand-written
 * server (test/fixtures/mcp_hostile_server.mjs) that breaks one rule at a time. What must hold:
 * one bad tool fails its own calls only, never the server's start; a list of 200 000 tools is
 * read up to a bound, never held whole or failing the start; a server that stops reading
 * its input while it floods the bridge with requests is ended (its call says why) instead of
 * growing the bridge's memory until it dies; the bridge answers and exits cleanly after either.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, ROOT, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const SERVER = path.join(ROOT, "test", "fixtures", "mcp_hostile_server.mjs");

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-mcp-hostile-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

const hostile = (mode: string, extra: object = {}) => ({ command: process.execPath, args: [SERVER], env: { HOSTILE_MODE: mode }, ...extra });
const text = (result: any): string => result.content.map((b: any) => b.text).join("");

/** Initializes a bridge with the server `h`, runs one prompt whose turn calls `tools`; the initialize result and the tool results by call id. */
async function run(server: object, tools: string[], args: string[] = []): Promise<{ c: RawClient; init: any; results: Record<string, any> }> {
  const script = ws.script("s.json", oneTurn({ toolCalls: tools.map((name, i) => ({ id: `c${i}`, name, arguments: {} })) }, { text: "done" }));
  const c = new RawClient({ args: ["--stdio", "--no-session-log", ...args] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script, { mcpServers: { h: server } }));
  const init = await c.response("init", 30_000);
  expect(init.error).toBeUndefined();
  c.request("p", "session/prompt", promptParams("s"));
  expect((await c.response("p", 60_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
  const results: Record<string, any> = {};
  for (const e of c.events("s")) if (e.type === "tool/result") results[e.data.callId] = e.data;
  return { c, init: init.result, results };
}

describe("a hostile MCP server", () => {
  it("an output schema that cannot be used or would take exponential time fails its own tool's calls at once, not the server's start; the other tool runs", async () => {
    const { c, init, results } = await run(hostile("bad-output-schema"), ["mcp__h__ok", "mcp__h__bad", "mcp__h__slow", "mcp__h__bomb"]);
    expect(init.mcpServers).toEqual([{ name: "h", status: "connected", tools: ["mcp__h__ok", "mcp__h__bad", "mcp__h__slow", "mcp__h__bomb"] }]);
    expect(results.c0).toMatchObject({ isError: false, content: [{ type: "text", text: "ran ok" }] });
    for (const id of ["c1", "c2", "c3"]) expect(results[id].isError).toBe(true);
    expect(text(results.c1)).toContain("the tool's output schema cannot be used: can't resolve reference #/definitions/missing");
    // Checked in linear time: `^(a+)+$` against 40 a's and a '!' is a plain mismatch, not a hang of every session.
    expect(text(results.c2)).toContain("Structured content does not match the tool's output schema: data/x must match pattern");
    expect(text(results.c3)).toContain("the tool's output schema cannot be used: its references expand to more than");
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 60_000);

  it("a tool whose listing entry the SDK's schema refuses still has its results checked against its output schema; one that re2js cannot run fails its calls saying why", async () => {
    const names = ["untyped_out", "odd_annotation", "bool_property", "lookahead"];
    const { c, init, results } = await run(hostile("unchecked-output"), names.map((n) => `mcp__h__${n}`));
    expect(init.mcpServers).toEqual([{ name: "h", status: "connected", tools: ["mcp__h__ok", ...names.map((n) => `mcp__h__${n}`)] }]);
    for (const id of ["c0", "c1"]) expect(text(results[id])).toContain("Structured content does not match the tool's output schema: data/x must be number");
    expect(text(results.c2)).toContain("Structured content does not match the tool's output schema: data/x boolean schema is false");
    expect(text(results.c3)).toContain("the tool's output schema cannot be used:");
    for (const id of ["c0", "c1", "c2", "c3"]) expect(results[id].isError).toBe(true);
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 60_000);

  it("tools the SDK's schema refuses do not fail the list: one without `type` is offered and runs, one whose schema is no object is left out saying why", async () => {
    const { c, init, results } = await run(hostile("bad-input-schema"), ["mcp__h__untyped", "mcp__h__listed"]);
    expect(init.mcpServers).toEqual([{ name: "h", status: "connected", tools: ["mcp__h__ok", "mcp__h__untyped"] }]);
    expect(results.c0).toMatchObject({ isError: false, content: [{ type: "text", text: "ran untyped" }] });
    expect(results.c1.isError).toBe(true);
    expect(text(results.c1)).toContain("the bridge leaves it out: 'listed' (its input schema is not an object");
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 60_000);

  it("a result with content the SDK's schema refuses is described to the model, not a failed call", async () => {
    const { results } = await run(hostile("odd-result"), ["mcp__h__ok"]);
    expect(results.c0).toMatchObject({ isError: false, content: [{ type: "text", text: 'ran ok\n[content of type "hologram", not shown]\n\n[malformed content item]' }] });
  }, 60_000);

  it("a server listing 200 000 tools on every page: the first 1 024 are read, 128 offered, the rest reported in one warning; its tools run", async () => {
    const { c, init, results } = await run(hostile("huge-list"), ["mcp__h__t5"], ["--log-level", "warn"]);
    expect(init.mcpServers[0]).toMatchObject({ name: "h", status: "connected" });
    expect(init.mcpServers[0].tools).toHaveLength(128);
    expect(init.mcpServers[0].tools.slice(0, 2)).toEqual(["mcp__h__ok", "mcp__h__t0"]);
    expect(results.c0).toMatchObject({ isError: false, content: [{ type: "text", text: "ran t5" }] });
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
    const warnings = c.stderr.split("\n").filter((line) => line.includes("tools left out"));
    expect(warnings).toEqual(["harness-bridge warn: MCP server h: tools left out: 896 tools past the first 128, every tool past the first 1024 listed (not read)"]);
  }, 60_000);

  it("a turn cancelled after finished calls tells the server to cancel the one call in flight only", async () => {
    const log = path.join(ws.dir, "server.log");
    const script = ws.script("s.json", oneTurn(...["a", "b", "c"].map((id) => ({ toolCalls: [{ id, name: "mcp__h__ok", arguments: {} }] })), { toolCalls: [{ id: "h", name: "mcp__h__hang", arguments: {} }] }, { text: "never" }));
    const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, script, { mcpServers: { h: { ...hostile("hang"), env: { HOSTILE_MODE: "hang", HOSTILE_LOG: log } } } }));
    expect((await c.response("init", 30_000)).error).toBeUndefined();
    c.request("p", "session/prompt", promptParams("s"));
    const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []);
    await expect.poll(() => lines().filter((l) => l.startsWith("call hang")), { timeout: 30_000 }).toHaveLength(1);
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("p", 30_000)).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    const hang = lines().find((l) => l.startsWith("call hang"))!.split(" ")[2];
    await expect.poll(() => lines().filter((l) => l.startsWith("cancelled")), { timeout: 10_000 }).toEqual([`cancelled ${hang}`]);
    // Nothing more comes: the finished calls' ids are never cancelled.
    await new Promise((r) => setTimeout(r, 300));
    expect(lines().filter((l) => l.startsWith("cancelled"))).toEqual([`cancelled ${hang}`]);
  }, 60_000);

  it("a server that stops reading its input and floods requests is ended, and the call says why", async () => {
    const { c, results } = await run(hostile("unread-flood", { toolTimeoutMs: 120_000 }), ["mcp__h__ok"]);
    expect(results.c0.isError).toBe(true);
    expect(text(results.c0)).toMatch(/^the MCP server h was stopped by the bridge: the MCP server does not read its input \(\d+ bytes in \d+ messages unread\) during this call/);
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 60_000);
});
