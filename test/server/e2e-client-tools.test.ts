/**
 * Client tools end to end, over the raw wire against the built binary: `initialize.clientTools`
 * (name rules), `tool/request` → `session/tool_result`, unknown and late answers, two sessions
 * waiting at once, the parallel-call rule and `read-only` mode, the deadline, cancel, end of
 * input, shutdown, and a bridge killed while a call is pending, then resumed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
const roots: string[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-ctools-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
  ws.cleanup();
});

const lookup = { name: "lookup", description: "Looks a word up in the client's dictionary", parameters: { type: "object", properties: { word: { type: "string" } } }, readOnly: true };
const deploy = { name: "deploy", description: "Deploys the build", parameters: { type: "object", properties: {} } };

function start(args = ["--stdio", "--no-session-log"]): RawClient {
  const c = new RawClient({ args });
  clients.push(c);
  return c;
}

async function initialized(model: string, extra: object = {}, args?: string[]): Promise<RawClient> {
  const c = start(args);
  c.request("init", "initialize", initParams(ws.dir, model, { clientTools: [lookup, deploy], ...extra }));
  const res = await c.response("init");
  expect(res.error).toBeUndefined();
  return c;
}

/** Waits for the `n`-th (1-based) event of a type in a session. */
function event(c: RawClient, sessionId: string, type: string, n = 1): Promise<any> {
  return c
    .waitFrame((f) => f.method === "session.event" && f.params.sessionId === sessionId && c.events(sessionId).filter((e) => e.type === type).length >= n, `${type} #${n} in ${sessionId}`)
    .then(() => c.events(sessionId).filter((e) => e.type === type)[n - 1]);
}

const answer = (sessionId: string, callId: string, text: string, isError?: boolean) => ({ sessionId, callId, content: [{ type: "text", text }], ...(isError === undefined ? {} : { isError }) });

const callThenDone = (calls: object[]) => oneTurn({ toolCalls: calls as any }, { text: "done" });

describe("initialize.clientTools", () => {
  it.each([
    ["a name outside [A-Za-z0-9_-]", [{ ...lookup, name: "look up" }], "params.clientTools.0.name"],
    ["a name of 65 characters", [{ ...lookup, name: "x".repeat(65) }], "params.clientTools.0.name"],
    ["a built-in's name", [{ ...lookup, name: "read_file" }], "built-in"],
    ["an MCP-style name", [{ ...lookup, name: "mcp__git__log" }], "mcp__"],
    ["the same name twice", [lookup, { ...lookup }], "given twice"],
    ["parameters that are not an object schema", [{ ...lookup, parameters: { type: "string" } }], "params.clientTools.0.parameters"],
    ["a missing description", [{ name: "x", parameters: { type: "object" } }], "params.clientTools.0.description"],
  ])("refuses %s with -32602 naming the field, and keeps serving", async (_what, clientTools, words) => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir, "demo", { clientTools }));
    const res = await c.response(1);
    expect(res.error?.code).toBe(-32602);
    expect(res.error?.message).toContain(words);
    c.request(2, "initialize", initParams(ws.dir, "demo", { clientTools: [lookup] }));
    expect((await c.response(2)).result).toMatchObject({ protocolVersion: 1 });
  });

  it("refuses a clientToolTimeoutMs setTimeout cannot hold, and an unknown approvals policy", async () => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir, "demo", { clientToolTimeoutMs: 2 ** 31 }));
    c.request(2, "initialize", initParams(ws.dir, "demo", { approvals: "sometimes" }));
    expect((await c.response(1)).error?.message).toContain("params.clientToolTimeoutMs");
    expect((await c.response(2)).error?.message).toContain("params.approvals");
  });
});

describe("a client tool call", () => {
  it("records tool/request, waits for session/tool_result, then records its tool/result; a late or duplicate answer is unknown-call", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-ctools-log-"));
    roots.push(root);
    const script = ws.script("s.json", callThenDone([{ id: "call_1", name: "lookup", arguments: { word: "harness" } }]));
    const c = await initialized(script, {}, ["--stdio", "--session-root", root]);
    c.request("p", "session/prompt", promptParams("s1", "look it up"));
    const request = await event(c, "s1", "tool/request");
    expect(request.data).toEqual({ callId: "call_1", name: "lookup", arguments: { word: "harness" } });
    // Nothing else happens while the client has not answered.
    c.request("wrong", "session/tool_result", answer("s1", "call_404", "?"));
    expect((await c.response("wrong")).error).toMatchObject({ code: -32602, data: { kind: "unknown-call", callId: "call_404" } });
    c.request("other-session", "session/tool_result", answer("s2", "call_1", "?"));
    expect((await c.response("other-session")).error?.data?.kind).toBe("unknown-call");
    expect(c.events("s1").some((e) => e.type === "tool/result")).toBe(false);

    c.request("a", "session/tool_result", answer("s1", "call_1", "a harness holds things together"));
    expect((await c.response("a")).result).toEqual({});
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const result = c.events("s1").find((e) => e.type === "tool/result");
    expect(result.data).toMatchObject({ callId: "call_1", name: "lookup", isError: false, content: [{ type: "text", text: "a harness holds things together" }] });
    expect(c.indexOf(c.frames.find((f) => f.id === "a")!)).toBeLessThan(c.frames.findIndex((f) => f.params?.event?.type === "tool/result"));

    c.request("dup", "session/tool_result", answer("s1", "call_1", "again"));
    expect((await c.response("dup")).error).toMatchObject({ code: -32602, data: { kind: "unknown-call" } });
    // tool/request is durable: the session log holds it, in order.
    const log = fs.readdirSync(root).flatMap((d) => fs.readdirSync(path.join(root, d)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(root, d, f)))[0];
    const types = fs.readFileSync(log, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l).type);
    expect(types).toEqual(["user/message", "turn/start", "step/start", "assistant/message", "tool/request", "tool/result", "step/start", "assistant/message", "turn/end"]);
  });

  it("an isError answer reaches the history as an error result, and the turn goes on", async () => {
    const c = await initialized(ws.script("s.json", callThenDone([{ id: "c", name: "deploy" }])));
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "tool/request");
    c.request("a", "session/tool_result", answer("s", "c", "the build is red", true));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(c.events("s").find((e) => e.type === "tool/result").data).toMatchObject({ isError: true, content: [{ type: "text", text: "the build is red" }] });
  });

  it("two sessions wait at once; the slow one answered last still gets its own result", async () => {
    const script = ws.script("s.json", callThenDone([{ id: "same_id", name: "lookup", arguments: { word: "w" } }]));
    const c = await initialized(script);
    c.request("p1", "session/prompt", promptParams("slow"));
    c.request("p2", "session/prompt", promptParams("fast"));
    await event(c, "slow", "tool/request");
    await event(c, "fast", "tool/request");
    c.request("a2", "session/tool_result", answer("fast", "same_id", "fast answer"));
    expect((await c.response("p2")).result.status).toBe("ok");
    expect(c.frames.some((f) => f.id === "p1")).toBe(false);
    c.request("a1", "session/tool_result", answer("slow", "same_id", "slow answer"));
    expect((await c.response("p1")).result.status).toBe("ok");
    expect(c.events("fast").find((e) => e.type === "tool/result").data.content[0].text).toBe("fast answer");
    expect(c.events("slow").find((e) => e.type === "tool/result").data.content[0].text).toBe("slow answer");
  });

  it("read-only client tools of one step are asked together; one that is not read-only waits its turn", async () => {
    const script = ws.script(
      "s.json",
      callThenDone([
        { id: "r1", name: "lookup", arguments: { word: "a" } },
        { id: "r2", name: "lookup", arguments: { word: "b" } },
        { id: "w1", name: "deploy" },
      ]),
    );
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "tool/request", 2);
    expect(c.events("s").filter((e) => e.type === "tool/request").map((e) => e.data.callId)).toEqual(["r1", "r2"]);
    c.request("a2", "session/tool_result", answer("s", "r2", "B"));
    await c.response("a2");
    c.request("a1", "session/tool_result", answer("s", "r1", "A"));
    const third = await event(c, "s", "tool/request", 3);
    expect(third.data.callId).toBe("w1");
    c.request("a3", "session/tool_result", answer("s", "w1", "deployed"));
    expect((await c.response("p")).result.status).toBe("ok");
    // Results are recorded in the model's order whatever order the answers came in.
    expect(c.events("s").filter((e) => e.type === "tool/result").map((e) => e.data.content[0].text)).toEqual(["A", "B", "deployed"]);
  });

  it("read-only mode offers only the read-only client tools", async () => {
    const script = ws.script("s.json", callThenDone([{ id: "w", name: "deploy" }]));
    const c = await initialized(script, { permissionMode: "read-only" });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(c.events("s").some((e) => e.type === "tool/request")).toBe(false);
    const result = c.events("s").find((e) => e.type === "tool/result").data;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toContain("unknown tool 'deploy'");
    expect(result.content[0].text).toContain("lookup");
  });

  it("past clientToolTimeoutMs the call gets an error result and the turn goes on; the late answer is unknown-call", async () => {
    const c = await initialized(ws.script("s.json", callThenDone([{ id: "c", name: "lookup" }])), { clientToolTimeoutMs: 200 });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const result = c.events("s").find((e) => e.type === "tool/result").data;
    expect(result).toMatchObject({ isError: true });
    expect(result.content[0].text).toContain("did not answer");
    c.request("late", "session/tool_result", answer("s", "c", "too late"));
    expect((await c.response("late")).error?.data?.kind).toBe("unknown-call");
  });

  it("session/cancel while the call waits ends the turn aborted with a valid history; the session takes the next prompt", async () => {
    const c = await initialized(ws.script("s.json", turns([{ toolCalls: [{ id: "c", name: "deploy" }] }, { text: "x" }], [{ text: "fine" }])));
    c.request("p", "session/prompt", promptParams("s", "one"));
    await event(c, "s", "tool/request");
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("p")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    const result = c.events("s").find((e) => e.type === "tool/result").data;
    expect(result).toMatchObject({ callId: "c", isError: true });
    expect(result.content[0].text).toContain("aborted");
    c.request("late", "session/tool_result", answer("s", "c", "late"));
    expect((await c.response("late")).error?.data?.kind).toBe("unknown-call");
    c.request("p2", "session/prompt", promptParams("s", "two"));
    expect((await c.response("p2")).result.status).toBe("ok");
  });

  it("end of input while a call waits: no answer can come, so the call fails, the turn finishes and the bridge exits 0", async () => {
    const c = await initialized(ws.script("s.json", callThenDone([{ id: "c", name: "lookup" }])));
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "tool/request");
    c.end();
    expect((await c.response("p")).result.status).toBe("ok");
    expect(c.events("s").find((e) => e.type === "tool/result").data.content[0].text).toContain("closed its input");
    expect((await c.exit()).code).toBe(0);
  });

  it("shutdown while a call waits aborts the turn and answers both", async () => {
    const c = await initialized(ws.script("s.json", callThenDone([{ id: "c", name: "lookup" }])));
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "tool/request");
    c.request("bye", "shutdown");
    expect((await c.response("p")).result.status).toBe("aborted");
    expect((await c.response("bye")).result).toEqual({});
    expect((await c.exit()).code).toBe(0);
  });

  it("a call pending when the bridge was killed gets an error result when the session resumes", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-ctools-kill-"));
    roots.push(root);
    const args = ["--stdio", "--session-root", root];
    const script = ws.script("s.json", turns([{ toolCalls: [{ id: "c", name: "lookup" }] }, { text: "x" }], [{ text: "resumed" }]));
    const first = await initialized(script, {}, args);
    first.request("p", "session/prompt", promptParams("s", "one"));
    await event(first, "s", "tool/request");
    first.kill("SIGKILL");
    await first.exit();

    const second = await initialized(script, {}, args);
    second.request("late", "session/tool_result", answer("s", "c", "from before"));
    expect((await second.response("late")).error?.data?.kind).toBe("unknown-call");
    second.request("p", "session/prompt", promptParams("s", "two"));
    expect((await second.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const events = second.events("s");
    expect(events[0].type).toBe("tool/result");
    expect(events[0].data).toMatchObject({ callId: "c", name: "lookup", isError: true });
    expect(events[0].data.content[0].text).toContain("bridge stopped");
    expect(events[1].type).toBe("user/message");
    expect(events.find((e) => e.type === "assistant/message").data.content).toEqual([{ type: "text", text: "resumed" }]);
  });
});

describe("answers are routed by their kind", () => {
  /** The session's log file under `root`, read back by a fresh bridge: it must load and answer a prompt. */
  async function reloads(root: string, script: string, sessionId: string): Promise<void> {
    const again = await initialized(script, {}, ["--stdio", "--session-root", root]);
    again.request("r", "session/read", { sessionId });
    const read = await again.response("r");
    expect(read.error).toBeUndefined();
    expect(read.result.events.filter((e: any) => e.type === "turn/end").map((e: any) => e.data.reason.kind)).toEqual(["completed"]);
    again.request("p2", "session/prompt", promptParams(sessionId, "again"));
    expect((await again.response("p2")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
  }

  it("a session/permission carrying a client tool's callId is unknown-request; the right answer still settles the call and the session reloads", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-ctools-kind-"));
    roots.push(root);
    const script = ws.script("s.json", turns([{ toolCalls: [{ id: "call_k", name: "lookup", arguments: { word: "w" } }] }, { text: "done" }], [{ text: "second" }]));
    const c = await initialized(script, {}, ["--stdio", "--session-root", root]);
    c.request("p", "session/prompt", promptParams("sk", "look it up"));
    await event(c, "sk", "tool/request");
    for (const decision of ["allow", "deny"]) {
      c.request(`wrong-${decision}`, "session/permission", { sessionId: "sk", requestId: "call_k", decision });
      expect((await c.response(`wrong-${decision}`)).error).toMatchObject({ code: -32602, data: { kind: "unknown-request", requestId: "call_k" } });
    }
    expect(c.events("sk").some((e) => e.type === "tool/result")).toBe(false);
    c.request("a", "session/tool_result", answer("sk", "call_k", "the word"));
    expect((await c.response("a")).result).toEqual({});
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(c.events("sk").find((e) => e.type === "tool/result").data).toMatchObject({ callId: "call_k", isError: false, content: [{ type: "text", text: "the word" }] });
    c.request("bye", "shutdown", {});
    await c.response("bye");
    await c.exit();
    await reloads(root, script, "sk");
  });

  it("a session/tool_result carrying an approval's requestId is unknown-call, not a deny; the decision still settles it and the session reloads", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-ctools-kind-"));
    roots.push(root);
    const script = ws.script("s.json", turns([{ toolCalls: [{ id: "call_p", name: "lookup", arguments: { word: "w" } }] }, { text: "done" }], [{ text: "second" }]));
    const c = await initialized(script, { approvals: "always" }, ["--stdio", "--session-root", root]);
    c.request("p", "session/prompt", promptParams("sp", "look it up"));
    const request = await event(c, "sp", "permission/request");
    c.request("wrong", "session/tool_result", answer("sp", request.data.requestId, "not a decision"));
    expect((await c.response("wrong")).error).toMatchObject({ code: -32602, data: { kind: "unknown-call", callId: request.data.requestId } });
    expect(c.events("sp").some((e) => e.type === "permission/decision" || e.type === "tool/result")).toBe(false);
    c.request("allow", "session/permission", { sessionId: "sp", requestId: request.data.requestId, decision: "allow" });
    expect((await c.response("allow")).result).toEqual({});
    const toolRequest = await event(c, "sp", "tool/request");
    // The client tool's wait is not an approval's either.
    c.request("wrong2", "session/permission", { sessionId: "sp", requestId: toolRequest.data.callId, decision: "deny" });
    expect((await c.response("wrong2")).error?.data?.kind).toBe("unknown-request");
    c.request("a", "session/tool_result", answer("sp", "call_p", "looked up"));
    expect((await c.response("a")).result).toEqual({});
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(c.events("sp").find((e) => e.type === "permission/decision").data.decision).toBe("allow");
    c.request("bye", "shutdown", {});
    await c.response("bye");
    await c.exit();
    await reloads(root, script, "sp");
  });
});

describe("a call id the model repeats within one step", () => {
  it("each call gets its own id (the second '#2'), its own request and its own answer; none is aborted", async () => {
    const script = ws.script("s.json", callThenDone([{ id: "same", name: "lookup", arguments: { word: "one" } }, { id: "same", name: "lookup", arguments: { word: "two" } }]));
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("s", "look both up"));
    const first = await event(c, "s", "tool/request", 1);
    const second = await event(c, "s", "tool/request", 2);
    expect([first.data, second.data]).toEqual([
      { callId: "same", name: "lookup", arguments: { word: "one" } },
      { callId: "same#2", name: "lookup", arguments: { word: "two" } },
    ]);
    c.request("a2", "session/tool_result", answer("s", "same#2", "second answer"));
    c.request("a1", "session/tool_result", answer("s", "same", "first answer"));
    expect((await c.response("a2")).result).toEqual({});
    expect((await c.response("a1")).result).toEqual({});
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const results = c.events("s").filter((e) => e.type === "tool/result").map((e) => [e.data.callId, e.data.isError, e.data.content[0].text]);
    expect(results).toEqual([
      ["same", false, "first answer"],
      ["same#2", false, "second answer"],
    ]);
    // The assistant message records the ids the results pair with.
    const message = c.events("s").find((e) => e.type === "assistant/message");
    expect(message.data.content.filter((b: any) => b.type === "tool-call").map((b: any) => b.id)).toEqual(["same", "same#2"]);
  });
});
