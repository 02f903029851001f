/**
 * Approvals end to end, over the raw wire against the built binary: `initialize.approvals`
 * gates built-in tools, client tools and subagents' calls behind `permission/request` →
 * `session/permission` → `permission/decision`; allow (with edited arguments), deny (read by the
 * model, which goes on), the deadline as a deny, cancel while waiting, unknown answers.
 */
import * as fs from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-approve-");
  ws.file("a.txt", "contents of a\n");
  ws.file("b.txt", "contents of b\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

async function initialized(script: object, extra: object, env?: NodeJS.ProcessEnv, provider = "scripted", model?: string): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--no-session-log"], env });
  clients.push(c);
  c.request("init", "initialize", { ...initParams(ws.dir, model ?? ws.script("s.json", script as any)), provider, ...extra });
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

function event(c: RawClient, sessionId: string, type: string, n = 1): Promise<any> {
  return c
    .waitFrame((f) => f.method === "session.event" && f.params.sessionId === sessionId && c.events(sessionId).filter((e) => e.type === type).length >= n, `${type} #${n} in ${sessionId}`)
    .then(() => c.events(sessionId).filter((e) => e.type === type)[n - 1]);
}

const ofType = (c: RawClient, sessionId: string, type: string) => c.events(sessionId).filter((e) => e.type === type);

const readA = oneTurn({ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "done" });

describe("approvals: always", () => {
  it("allow runs the call; the request and the decision are recorded before its result", async () => {
    const c = await initialized(readA, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const request = await event(c, "s", "permission/request");
    expect(request.data).toEqual({ requestId: expect.any(String), callId: "r", name: "read_file", arguments: { path: "a.txt" } });
    expect(ofType(c, "s", "tool/result")).toEqual([]);
    c.request("ok", "session/permission", { sessionId: "s", requestId: request.data.requestId, decision: "allow" });
    expect((await c.response("ok")).result).toEqual({});
    expect((await c.response("p")).result.status).toBe("ok");
    const types = c.events("s").map((e) => e.type).filter((t) => t !== "assistant/chunk");
    expect(types.slice(types.indexOf("permission/request"), types.indexOf("tool/result") + 1)).toEqual(["permission/request", "permission/decision", "tool/result"]);
    expect(ofType(c, "s", "permission/decision")[0].data).toEqual({ requestId: request.data.requestId, decision: "allow" });
    expect(ofType(c, "s", "tool/result")[0].data.content[0].text).toContain("contents of a");
    c.request("again", "session/permission", { sessionId: "s", requestId: request.data.requestId, decision: "deny" });
    expect((await c.response("again")).error).toMatchObject({ code: -32602, data: { kind: "unknown-request" } });
  });

  it("allow with edited arguments runs the call with them, and the decision records them", async () => {
    const c = await initialized(readA, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "permission/request");
    c.request("ok", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow", arguments: { path: "b.txt" } });
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "permission/decision")[0].data).toEqual({ requestId: data.requestId, decision: "allow", arguments: { path: "b.txt" } });
    expect(ofType(c, "s", "tool/result")[0].data.content[0].text).toContain("contents of b");
  });

  it("arguments that are not an object are refused -32602 and the request still waits", async () => {
    const c = await initialized(readA, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "permission/request");
    c.request("bad", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow", arguments: ["b.txt"] });
    expect((await c.response("bad")).error?.message).toContain("params.arguments");
    c.request("bad2", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "maybe" });
    expect((await c.response("bad2")).error?.message).toContain("params.decision");
    c.request("ok", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow" });
    expect((await c.response("p")).result.status).toBe("ok");
  });

  it("deny records an error result holding the message; the call never runs and the turn goes on", async () => {
    const script = oneTurn({ toolCalls: [{ id: "w", name: "write_file", arguments: { path: "new.txt", content: "x" } }] }, { text: "understood" });
    const c = await initialized(script, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "permission/request");
    c.request("no", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "deny", message: "not in this repository" });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(ofType(c, "s", "permission/decision")[0].data).toEqual({ requestId: data.requestId, decision: "deny", message: "not in this repository" });
    expect(ofType(c, "s", "tool/result")[0].data).toMatchObject({ callId: "w", isError: true, content: [{ type: "text", text: "not in this repository" }] });
    expect(fs.existsSync(`${ws.dir}/new.txt`)).toBe(false);
  });

  it("gates client tools: approval first, then tool/request", async () => {
    const lookup = { name: "lookup", description: "d", parameters: { type: "object" }, readOnly: true };
    const c = await initialized(oneTurn({ toolCalls: [{ id: "c", name: "lookup" }] }, { text: "done" }), { approvals: "always", clientTools: [lookup] });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "permission/request");
    expect(ofType(c, "s", "tool/request")).toEqual([]);
    c.request("ok", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow", arguments: { word: "edited" } });
    expect((await event(c, "s", "tool/request")).data).toEqual({ callId: "c", name: "lookup", arguments: { word: "edited" } });
    c.request("a", "session/tool_result", { sessionId: "s", callId: "c", content: [{ type: "text", text: "hit" }] });
    expect((await c.response("p")).result.status).toBe("ok");
  });

  it("a subagent's calls wait for approval too, under the child's session id", async () => {
    const script = {
      turns: [{ steps: [{ toolCalls: [{ id: "t", name: "task", arguments: { prompt: "read a.txt" } }] }, { text: "parent done" }] }],
      subagent: { turns: [{ steps: [{ toolCalls: [{ id: "cr", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "child done" }] }] },
    };
    const c = await initialized(script, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const parentRequest = await event(c, "s", "permission/request");
    expect(parentRequest.data.name).toBe("task");
    c.request("ok1", "session/permission", { sessionId: "s", requestId: parentRequest.data.requestId, decision: "allow" });
    const started = await c.waitFrame((f) => f.method === "subagent.started");
    const child = started.params.childSessionId;
    const childRequest = await event(c, child, "permission/request");
    expect(childRequest.data).toMatchObject({ callId: "cr", name: "read_file" });
    // The parent's session id does not reach the child's request.
    c.request("wrong", "session/permission", { sessionId: "s", requestId: childRequest.data.requestId, decision: "allow" });
    expect((await c.response("wrong")).error?.data?.kind).toBe("unknown-request");
    c.request("ok2", "session/permission", { sessionId: child, requestId: childRequest.data.requestId, decision: "deny", message: "no reading" });
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, child, "tool/result")[0].data).toMatchObject({ isError: true, content: [{ type: "text", text: "no reading" }] });
  });

  it("past clientToolTimeoutMs no decision is a recorded deny, and the turn goes on", async () => {
    const c = await initialized(readA, { approvals: "always", clientToolTimeoutMs: 200 });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result.status).toBe("ok");
    const decision = ofType(c, "s", "permission/decision")[0].data;
    expect(decision.decision).toBe("deny");
    expect(decision.message).toContain("no decision came within 200 ms");
    expect(ofType(c, "s", "tool/result")[0].data.isError).toBe(true);
  });

  it("session/cancel while a call waits for approval ends the turn aborted, with an error result and no decision", async () => {
    const c = await initialized(turns([{ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "x" }], [{ text: "fine" }]), { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s", "one"));
    const { data } = await event(c, "s", "permission/request");
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("p")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    expect(ofType(c, "s", "permission/decision")).toEqual([]);
    expect(ofType(c, "s", "tool/result")[0].data).toMatchObject({ callId: "r", isError: true });
    c.request("late", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow" });
    expect((await c.response("late")).error?.data?.kind).toBe("unknown-request");
    c.request("p2", "session/prompt", promptParams("s", "two"));
    expect((await c.response("p2")).result.status).toBe("ok");
  });

  it("end of input while a call waits for approval is a recorded deny; the turn finishes and the bridge exits 0", async () => {
    const c = await initialized(readA, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "permission/request");
    c.end();
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "permission/decision")[0].data).toMatchObject({ decision: "deny", message: expect.stringContaining("closed its input") });
    expect((await c.exit()).code).toBe(0);
  });
});

describe("approvals: writes", () => {
  it("read-only calls run at once; the others wait", async () => {
    const script = oneTurn({ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }, { id: "w", name: "write_file", arguments: { path: "c.txt", content: "c" } }] }, { text: "done" });
    const c = await initialized(script, { approvals: "writes" });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "permission/request");
    expect(data.callId).toBe("w");
    expect(ofType(c, "s", "tool/result").map((e) => e.data.callId)).toEqual(["r"]);
    c.request("ok", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "allow" });
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "permission/request")).toHaveLength(1);
    expect(fs.readFileSync(`${ws.dir}/c.txt`, "utf8")).toBe("c");
  });
});

describe("a deny the model reads (DeepSeek route)", () => {
  const deepseek = useFakeDeepSeek();
  const server = deepseek.server;

  it("the deny message is the tool message of the next request, and the model answers after it", async () => {
    const prompt = "Write the file.";
    server.table = {
      [prompt]: [
        {
          events: [
            { delta: { role: "assistant", content: null, reasoning_content: "I will write it." } },
            { delta: { tool_calls: [{ index: 0, id: "call_w", type: "function", function: { name: "write_file", arguments: '{"path":"x.txt","content":"x"}' } }] } },
            { delta: {}, finish_reason: "tool_calls" },
          ],
        },
        { events: [{ delta: { role: "assistant", content: null, reasoning_content: "Denied." } }, { delta: { content: "I was not allowed to write x.txt." } }, { delta: {}, finish_reason: "stop" }] },
      ],
    };
    const c = await initialized({}, { approvals: "writes" }, deepseek.env(), "deepseek", "deepseek-v4-flash");
    c.request("p", "session/prompt", promptParams("s", prompt));
    const { data } = await event(c, "s", "permission/request");
    c.request("no", "session/permission", { sessionId: "s", requestId: data.requestId, decision: "deny", message: "writing is off today" });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(server.problems).toEqual([]);
    const toolMessage = server.requests[1].messages.find((m: any) => m.role === "tool") as any;
    expect(toolMessage).toMatchObject({ tool_call_id: "call_w" });
    expect(JSON.stringify(toolMessage.content)).toContain("writing is off today");
    const last = ofType(c, "s", "assistant/message").at(-1).data.content;
    expect(last).toContainEqual({ type: "text", text: "I was not allowed to write x.txt." });
  });
});

describe("a call id the model repeats within one step", () => {
  it("built-in calls awaiting approval get their own ids and decisions; each result is its own file's", async () => {
    const script = oneTurn(
      { toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }, { id: "r", name: "read_file", arguments: { path: "b.txt" } }] },
      { text: "done" },
    );
    const c = await initialized(script, { approvals: "always" });
    c.request("p", "session/prompt", promptParams("s"));
    const first = await event(c, "s", "permission/request", 1);
    expect(first.data.callId).toBe("r");
    c.request("allow1", "session/permission", { sessionId: "s", requestId: first.data.requestId, decision: "allow" });
    const second = await event(c, "s", "permission/request", 2);
    expect(second.data).toMatchObject({ callId: "r#2", arguments: { path: "b.txt" } });
    c.request("deny2", "session/permission", { sessionId: "s", requestId: second.data.requestId, decision: "deny", message: "not b" });
    expect((await c.response("allow1")).result).toEqual({});
    expect((await c.response("deny2")).result).toEqual({});
    expect((await c.response("p")).result.status).toBe("ok");
    const results = ofType(c, "s", "tool/result").map((e) => [e.data.callId, e.data.isError, e.data.content[0].text]);
    expect(results).toEqual([
      ["r", false, expect.stringContaining("contents of a")],
      ["r#2", true, "not b"],
    ]);
  });
});
