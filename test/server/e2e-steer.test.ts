/**
 * `session/steer` end to end, over the raw wire against the built binary (PROTOCOL.md "Turn
 * control", docs/PROTOCOL.md "Steering"): a steer joins the running turn's history after the
 * results of the tool calls already running and before the next model request; several keep
 * their order; a steer while the model streams waits for the step; a turn about to complete
 * goes on to answer a steer; nothing is recorded for a steer with no turn in flight, for an
 * unknown session, during a compaction or a cancelled turn; a resumed session sends the steer
 * back in its place; bad params are -32602 and the bridge keeps serving.
 *
 * Determinism: a client tool holds the step open until the test answers it, so "a steer while
 * tools run" is the order of the requests on the wire, not a race.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { MAX_WAITING_STEERS } from "../../src/agent/steer.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-steer-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-steer-log-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  fs.rmSync(root, { recursive: true, force: true });
  ws.cleanup();
});

const waitTool = { name: "wait_for_me", description: "Returns when the client says so", parameters: { type: "object", properties: {} } };
const steerParams = (sessionId: string, text: string) => ({ sessionId, contentBlocks: [{ type: "text", text }] });
const types = (c: RawClient, sessionId: string) => c.events(sessionId).map((e) => e.type);

async function started(script: object | string, extra: object = {}, env?: NodeJS.ProcessEnv, provider = "scripted"): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--session-root", root], env });
  clients.push(c);
  const model = typeof script === "string" ? script : ws.script("s.json", script as never);
  c.request("init", "initialize", { ...initParams(ws.dir, model, { clientTools: [waitTool], ...extra }), provider });
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

/** Waits for the session's first event of `type`. */
const eventOf = (c: RawClient, sessionId: string, type: string) =>
  c.waitFrame((f) => f.method === "session.event" && f.params.sessionId === sessionId && f.params.event.type === type, type);

const TOOL_THEN_ANSWER = {
  turns: [{ steps: [{ toolCalls: [{ id: "w1", name: "wait_for_me", arguments: {} }] }, { text: "done, and I saw the steers" }] }],
};

describe("session/steer during a running turn", () => {
  it("joins after the running tool's result, before the next request, in order; answered after its event; the turn settles once", async () => {
    const c = await started(TOOL_THEN_ANSWER);
    c.request("p", "session/prompt", promptParams("s", "start"));
    const request = await eventOf(c, "s", "tool/request");
    // Both steers are on the wire before the tool's result: they wait for the step to end.
    c.send(
      RawClient.request("a", "session/steer", steerParams("s", "also run the tests")),
      RawClient.request("b", "session/steer", steerParams("s", "and lint")),
      RawClient.request("r", "session/tool_result", { sessionId: "s", callId: request.params.event.data.callId, content: [{ type: "text", text: "ok" }] }),
    );
    expect((await c.response("a")).result).toEqual({ steered: true });
    expect((await c.response("b")).result).toEqual({ steered: true });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });

    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen).toEqual([
      "user/message", "turn/start", "step/start", "assistant/message", "tool/request", "tool/result",
      "user/steer", "user/steer", "step/start", "assistant/message", "checkpoint", "turn/end",
    ]);
    const steers = c.events("s").filter((e) => e.type === "user/steer");
    expect(steers.map((e) => e.data.content[0].text)).toEqual(["also run the tests", "and lint"]);
    expect(steers[0].data.id).toMatch(/^msg_/);
    // Each answer comes after its event.
    const steerFrames = c.frames.filter((f) => f.method === "session.event" && f.params.event.type === "user/steer");
    expect(c.indexOf(await c.response("a"))).toBeGreaterThan(c.indexOf(steerFrames[0]));
    expect(c.indexOf(await c.response("b"))).toBeGreaterThan(c.indexOf(steerFrames[1]));
    // Exactly one prompt response.
    expect(c.frames.filter((f) => f.id === "p")).toHaveLength(1);
  });

  it("a steer while the model streams its final answer waits for the step, and the turn goes on to answer it", async () => {
    const c = await started({
      turns: [{ steps: [{ text: "x".repeat(60), chunkSize: 1, delayMs: 25 }, { text: "answering the steer" }] }],
    });
    c.request("p", "session/prompt", promptParams("s", "write"));
    await eventOf(c, "s", "assistant/chunk");
    c.request("a", "session/steer", steerParams("s", "shorter please"));
    expect((await c.response("a")).result).toEqual({ steered: true });
    expect((await c.response("p")).result.status).toBe("ok");
    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen).toEqual(["user/message", "turn/start", "step/start", "assistant/message", "user/steer", "step/start", "assistant/message", "turn/end"]);
    expect(c.events("s").at(-2).data.content).toEqual([{ type: "text", text: "answering the steer" }]);
  });

  it("no step left: the turn completes as it would have and the steer is refused, nothing recorded", async () => {
    const c = await started({ turns: [{ steps: [{ text: "x".repeat(60), chunkSize: 1, delayMs: 25 }] }] }, { maxSteps: 1 });
    c.request("p", "session/prompt", promptParams("s", "write"));
    await eventOf(c, "s", "assistant/chunk");
    c.request("a", "session/steer", steerParams("s", "too late"));
    expect((await c.response("a")).result).toEqual({ steered: false });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(types(c, "s")).not.toContain("user/steer");
  });

  it("a structured turn whose answer was accepted ends with it: a steer during that step is refused", async () => {
    const c = await started({
      turns: [{ steps: [{ text: "y".repeat(60), chunkSize: 1, delayMs: 25, toolCalls: [{ id: "f", name: "final_answer", arguments: { answer: "42" } }] }, { text: "never asked" }] }],
    });
    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };
    c.request("p", "session/prompt", { ...promptParams("s", "answer"), outputSchema: schema });
    await eventOf(c, "s", "assistant/chunk");
    c.request("a", "session/steer", steerParams("s", "actually, explain it"));
    expect((await c.response("a")).result).toEqual({ steered: false });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(c.events("s").at(-1).data.output).toEqual({ answer: "42" });
    expect(types(c, "s")).not.toContain("user/steer");
  });

  it("with a stop hook: an answer with a steer waiting is not the end (no stop hook asked for it); the next answer is", async () => {
    const c = await started({ turns: [{ steps: [{ text: "z".repeat(60), chunkSize: 1, delayMs: 25 }, { text: "answered the steer" }] }] }, { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s", "write"));
    await eventOf(c, "s", "assistant/chunk");
    c.request("a", "session/steer", steerParams("s", "and shorter"));
    expect((await c.response("a")).result).toEqual({ steered: true });
    const request = await eventOf(c, "s", "hook/request");
    expect(request.params.event.data).toMatchObject({ hook: "stop", text: "answered the steer" });
    c.request("h", "session/hook", { sessionId: "s", hookId: request.params.event.data.hookId });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen).toEqual([
      "user/message", "turn/start", "step/start", "assistant/message", "user/steer", "step/start", "assistant/message", "hook/request", "hook/decision", "turn/end",
    ]);
  });

  it("a steer that comes while the stop hook waits keeps the turn going when the hook lets it end", async () => {
    const c = await started({ turns: [{ steps: [{ text: "first answer" }, { text: "answered the steer" }] }] }, { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s", "write"));
    const first = await eventOf(c, "s", "hook/request");
    // The steer is read before the hook's answer: it waits; the hook lets the turn end; the steer wins.
    c.send(
      RawClient.request("a", "session/steer", steerParams("s", "one more thing")),
      RawClient.request("h1", "session/hook", { sessionId: "s", hookId: first.params.event.data.hookId }),
    );
    expect((await c.response("a")).result).toEqual({ steered: true });
    const second = await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "hook/request" && f.params.event.data.hookId !== first.params.event.data.hookId, "the second stop hook");
    c.request("h2", "session/hook", { sessionId: "s", hookId: second.params.event.data.hookId });
    expect((await c.response("p")).result.status).toBe("ok");
    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen.slice(seen.indexOf("hook/decision"))).toEqual(["hook/decision", "user/steer", "step/start", "assistant/message", "hook/request", "hook/decision", "turn/end"]);
  });

  it("a cancelled turn refuses its waiting steer and any later one; nothing is recorded", async () => {
    const c = await started({ turns: [{ steps: [{ text: "thinking", chunkSize: 100, hang: true }] }] });
    c.request("p", "session/prompt", promptParams("s", "take your time"));
    await eventOf(c, "s", "assistant/chunk");
    c.request("a", "session/steer", steerParams("s", "queued before the cancel"));
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("a")).result).toEqual({ steered: false });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    expect((await c.response("p")).result.status).toBe("aborted");
    c.request("late", "session/steer", steerParams("s", "after the end"));
    expect((await c.response("late")).result).toEqual({ steered: false });
    expect(types(c, "s")).not.toContain("user/steer");
  });
});

describe("session/steer at the edges of a turn's life", () => {
  it(`past ${MAX_WAITING_STEERS} steers waiting: -32001 too-many-steers; those waiting are recorded in order`, async () => {
    const c = await started(TOOL_THEN_ANSWER);
    c.request("p", "session/prompt", promptParams("s", "start"));
    const request = await eventOf(c, "s", "tool/request");
    const ids = Array.from({ length: MAX_WAITING_STEERS + 1 }, (_, i) => `st${i}`);
    c.send(...ids.map((id, i) => RawClient.request(id, "session/steer", steerParams("s", `steer ${i}`))));
    const refused = await c.response(ids.at(-1) as string);
    expect(refused.error).toMatchObject({ code: -32001, data: { kind: "too-many-steers", sessionId: "s" } });
    c.request("r", "session/tool_result", { sessionId: "s", callId: request.params.event.data.callId, content: [{ type: "text", text: "ok" }] });
    for (const id of ids.slice(0, -1)) expect((await c.response(id)).result).toEqual({ steered: true });
    expect((await c.response("p")).result.status).toBe("ok");
    const texts = c.events("s").filter((e) => e.type === "user/steer").map((e) => e.data.content[0].text);
    expect(texts).toEqual(ids.slice(0, -1).map((_, i) => `steer ${i}`));
  });

  it("end of input with a steer waiting: the turn goes on, the steer is answered, the bridge exits 0", async () => {
    const c = await started(TOOL_THEN_ANSWER);
    c.request("p", "session/prompt", promptParams("s", "start"));
    await eventOf(c, "s", "tool/request");
    c.request("a", "session/steer", steerParams("s", "one more thing"));
    // No tool result can come now: the client tool call ends with an error result, then the steer joins.
    c.end();
    expect((await c.response("a")).result).toEqual({ steered: true });
    expect((await c.response("p")).result.status).toBe("ok");
    expect((await c.exit()).code).toBe(0);
    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen.slice(seen.indexOf("tool/result"))).toEqual(["tool/result", "user/steer", "step/start", "assistant/message", "checkpoint", "turn/end"]);
  });

  it("shutdown with a steer waiting: the turn is aborted, the steer refused and nothing recorded", async () => {
    const c = await started(TOOL_THEN_ANSWER);
    c.request("p", "session/prompt", promptParams("s", "start"));
    await eventOf(c, "s", "tool/request");
    c.request("a", "session/steer", steerParams("s", "one more thing"));
    // A steer read after the shutdown is refused as every request then is (-32003).
    c.send(RawClient.request("bye", "shutdown"), RawClient.request("late", "session/steer", steerParams("s", "after shutdown")));
    expect((await c.response("a")).result).toEqual({ steered: false });
    expect((await c.response("p")).result.status).toBe("aborted");
    expect((await c.response("bye")).result).toEqual({});
    expect((await c.response("late")).error).toMatchObject({ code: -32003 });
    expect(types(c, "s")).not.toContain("user/steer");
  });
});

describe("session/steer with no turn to steer", () => {
  it("an idle session, an unknown session and another session's turn: steered false, nothing recorded or created, and steering never starts a turn", async () => {
    // Every session's first turn: a client tool call, then an answer.
    const c = await started(TOOL_THEN_ANSWER);
    c.request("p1", "session/prompt", promptParams("idle", "hi"));
    const first = await eventOf(c, "idle", "tool/request");
    c.request("r0", "session/tool_result", { sessionId: "idle", callId: first.params.event.data.callId, content: [{ type: "text", text: "ok" }] });
    expect((await c.response("p1")).result.status).toBe("ok");
    const before = c.events("idle").length;
    c.request("s1", "session/steer", steerParams("idle", "anyone?"));
    expect((await c.response("s1")).result).toEqual({ steered: false });
    c.request("s2", "session/steer", steerParams("nobody", "hello?"));
    expect((await c.response("s2")).result).toEqual({ steered: false });
    expect(c.events("idle")).toHaveLength(before);
    expect(c.events("nobody")).toHaveLength(0);
    c.request("list", "session/list", {});
    const ids = (await c.response("list")).result.sessions.map((s: { sessionId: string }) => s.sessionId);
    expect(ids).toEqual(["idle"]);

    // A turn in flight in "busy": a steer for "idle" does not reach it.
    c.request("p2", "session/prompt", promptParams("busy", "go"));
    const request = await eventOf(c, "busy", "tool/request");
    c.request("s3", "session/steer", steerParams("idle", "wrong session"));
    expect((await c.response("s3")).result).toEqual({ steered: false });
    c.request("r", "session/tool_result", { sessionId: "busy", callId: request.params.event.data.callId, content: [{ type: "text", text: "ok" }] });
    expect((await c.response("p2")).result.status).toBe("ok");
    expect(types(c, "busy")).not.toContain("user/steer");
    expect(c.events("idle")).toHaveLength(before);
  });

  it("while session/compact runs (no turn in flight): steered false, nothing recorded", async () => {
    const c = await started({
      turns: [{ steps: [{ text: "a long answer ".repeat(50) }] }],
      compaction: { steps: [{ text: "SUMMARY of it", chunkSize: 1, delayMs: 5 }] },
    });
    c.request("p", "session/prompt", promptParams("s", "x".repeat(4_000)));
    await c.response("p");
    // In one write: the compaction is in flight when the steer is read.
    c.send(RawClient.request("k", "session/compact", { sessionId: "s" }), RawClient.request("a", "session/steer", steerParams("s", "during the compaction")));
    expect((await c.response("a")).result).toEqual({ steered: false });
    expect((await c.response("k")).result).toEqual({ compacted: true });
    expect(types(c, "s")).not.toContain("user/steer");
  });

  it("a steer during a turn that compacts before its next request joins the history and survives the compaction", async () => {
    ws.file("notes.txt", "the notes\n");
    const c = await started(
      {
        turns: [{ steps: [{ toolCalls: [{ id: "w1", name: "wait_for_me", arguments: {} }], usage: { inputTokens: 9_000, outputTokens: 10 } }, { text: "after the compaction" }] }],
        compaction: { steps: [{ text: "SUMMARY: a long prompt" }] },
      },
      { contextWindow: 10_000 },
    );
    c.request("p", "session/prompt", promptParams("s", "x".repeat(20_000)));
    const request = await eventOf(c, "s", "tool/request");
    c.send(
      RawClient.request("a", "session/steer", steerParams("s", "keep this in mind")),
      RawClient.request("r", "session/tool_result", { sessionId: "s", callId: request.params.event.data.callId, content: [{ type: "text", text: "ok" }] }),
    );
    expect((await c.response("a")).result).toEqual({ steered: true });
    expect((await c.response("p")).result.status).toBe("ok");
    const seen = types(c, "s").filter((t) => t !== "assistant/chunk");
    expect(seen.slice(seen.indexOf("tool/result"))).toEqual(["tool/result", "user/steer", "context/compacted", "step/start", "assistant/message", "checkpoint", "turn/end"]);
    // The steer is kept after the summary (it is newer than what was summarized).
    const steer = c.events("s").find((e) => e.type === "user/steer");
    const compacted = c.events("s").find((e) => e.type === "context/compacted");
    expect(compacted.data.keptFromSeq).toBeLessThanOrEqual(steer.seq);
  });
});

describe("session/steer params", () => {
  it.each([
    ["no contentBlocks", { sessionId: "s" }, "params.contentBlocks"],
    ["empty contentBlocks", { sessionId: "s", contentBlocks: [] }, "params.contentBlocks"],
    ["a block that is not text", { sessionId: "s", contentBlocks: [{ type: "image", data: "x" }] }, "params.contentBlocks.0"],
    ["a text that is not a string", { sessionId: "s", contentBlocks: [{ type: "text", text: 5 }] }, "params.contentBlocks.0.text"],
    ["a bad session id", { sessionId: "../x", contentBlocks: [{ type: "text", text: "hi" }] }, "params.sessionId"],
    ["no params at all", undefined, "params.sessionId"],
  ])("%s: -32602 invalid-params naming the field, and the bridge keeps serving", async (_what, params, field) => {
    const c = await started({ turns: [{ steps: [{ text: "fine" }] }] });
    c.request("bad", "session/steer", params);
    const res = await c.response("bad");
    expect(res.error).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
    expect(res.error?.message).toContain(field);
    c.request("p", "session/prompt", promptParams("s", "still there?"));
    expect((await c.response("p")).result.status).toBe("ok");
  });
});

describe("steering over HTTP (fake DeepSeek server, thinking mode)", () => {
  const deepseek = useFakeDeepSeek();
  const server = deepseek.server;

  it("the steer is sent as a user message after the tool result, and a resumed session sends it back in its place", async () => {
    server.table = {
      "read the notes": [
        { events: [{ delta: { reasoning_content: "call it" } }, { delta: { tool_calls: [{ index: 0, id: "call_w", type: "function", function: { name: "wait_for_me", arguments: "{}" } }] } }, { delta: {}, finish_reason: "tool_calls" }] },
      ],
      "also check the tests": [{ events: [{ delta: { reasoning_content: "ok" } }, { delta: { content: "steered answer" } }, { delta: {}, finish_reason: "stop" }] }],
      "next turn": [{ events: [{ delta: { content: "resumed answer" } }, { delta: {}, finish_reason: "stop" }] }],
    };
    const env = deepseek.env({ HARNESS_RETRY_BASE_MS: "10" });
    const a = await started("deepseek-v4-flash", {}, env, "deepseek");
    a.request("p", "session/prompt", promptParams("s", "read the notes"));
    const request = await eventOf(a, "s", "tool/request");
    a.send(
      RawClient.request("st", "session/steer", steerParams("s", "also check the tests")),
      RawClient.request("r", "session/tool_result", { sessionId: "s", callId: request.params.event.data.callId, content: [{ type: "text", text: "tool says ok" }] }),
    );
    expect((await a.response("st")).result).toEqual({ steered: true });
    expect((await a.response("p")).result.status).toBe("ok");
    const roles = (i: number) => server.requests[i].messages.map((m) => `${m.role}${m.role === "user" || m.role === "tool" ? `:${m.content}` : ""}`);
    expect(roles(1)).toEqual(["system", "user:read the notes", "assistant", "tool:tool says ok", "user:also check the tests"]);
    a.request("bye", "shutdown");
    await a.response("bye");

    // A new bridge resumes the session from its log: the steer is in the history, in its place.
    const b = await started("deepseek-v4-flash", {}, env, "deepseek");
    b.request("p2", "session/prompt", promptParams("s", "next turn"));
    expect((await b.response("p2")).result.status).toBe("ok");
    expect(roles(2)).toEqual(["system", "user:read the notes", "assistant", "tool:tool says ok", "user:also check the tests", "assistant", "user:next turn"]);
    expect(server.problems).toEqual([]);
  });
});
