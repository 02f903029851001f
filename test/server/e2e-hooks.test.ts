/**
 * Hooks end to end, over the raw wire against the built binary (PROTOCOL.md "Turn control"):
 * `initialize.hooks` makes turns wait at `prompt-submit`, `post-tool` and `stop` for
 * `session/hook`; what each answer does to the turn and to the history the model sees (the
 * DeepSeek-shaped fake shows what is sent); which sessions and calls meet which hook. The
 * refused answers, no answer, cancel and resume: e2e-hooks-waits.test.ts.
 */
import { describe, expect, it } from "vitest";
import { FakeDeepSeek, fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { hookKit } from "../support/hook-kit.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, turns } from "../support/scripts.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

const kit = hookKit("hb-hooks-");
const { initialized, event, ofType, types, hook } = kit;

describe("initialize.hooks", () => {
  it("an unknown hook name is -32602 naming params.hooks, and the bridge keeps serving; a name given twice counts once", async () => {
    const c = new RawClient();
    kit.clients.push(c);
    c.request("bad", "initialize", { ...initParams(kit.ws.dir), provider: "scripted", hooks: ["stop", "pre-tool"] });
    const refused = await c.response("bad");
    expect(refused.error).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
    expect(refused.error?.message).toContain("params.hooks.1");
    c.request("ok", "initialize", { ...initParams(kit.ws.dir, kit.ws.script("s.json", oneTurn({ text: "done" }))), provider: "scripted", hooks: ["stop", "stop"] });
    expect((await c.response("ok")).error).toBeUndefined();
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "hook/request");
    c.request("h", "session/hook", hook("s", data.hookId));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "hook/request")).toHaveLength(1);
  });

  it("without hooks no hook event is recorded and session/hook finds nothing to answer", async () => {
    const c = await initialized(oneTurn({ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "done" }), {});
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(types(c, "s").some((t) => t.startsWith("hook/"))).toBe(false);
    c.request("h", "session/hook", hook("s", "hook_x"));
    expect((await c.response("h")).error).toMatchObject({ code: -32602, data: { kind: "unknown-hook" } });
  });
});

describe("prompt-submit (over the DeepSeek-shaped fake: what the model is sent)", () => {
  const deepseek = useFakeDeepSeek();
  const server = deepseek.server;
  const answer = (text: string) => [{ events: [{ delta: { content: text }, finish_reason: "stop" }] }];
  const userTexts = (n: number) =>
    server.requests[n].messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

  it("block ends the turn blocked with no model request, and the blocked prompt never reaches the model", async () => {
    server.requests.length = 0;
    server.table = { hello: answer("hi") };
    const c = await initialized({}, { hooks: ["prompt-submit"] }, undefined, deepseek.env(), "deepseek", "deepseek-chat");
    c.request("p", "session/prompt", promptParams("s", "read secrets/key.pem"));
    const request = await event(c, "s", "hook/request");
    expect(request.data).toEqual({ hookId: expect.stringMatching(/^hook_/), hook: "prompt-submit", content: [{ type: "text", text: "read secrets/key.pem" }] });
    c.request("h", "session/hook", hook("s", request.data.hookId, { block: "prompts may not name secrets/" }));
    expect((await c.response("h")).result).toEqual({});
    expect((await c.response("p")).result).toEqual({ status: "error", reason: { kind: "blocked", message: "prompts may not name secrets/" } });
    expect(types(c, "s")).toEqual(["user/message", "turn/start", "hook/request", "hook/decision", "turn/end"]);
    expect(ofType(c, "s", "hook/decision")[0].data).toEqual({ hookId: request.data.hookId, hook: "prompt-submit", block: "prompts may not name secrets/" });
    expect(server.requests).toHaveLength(0);

    c.request("p2", "session/prompt", promptParams("s", "hello"));
    const second = await event(c, "s", "hook/request", 2);
    c.request("h2", "session/hook", hook("s", second.data.hookId));
    expect((await c.response("p2")).result.status).toBe("ok");
    expect(userTexts(0)).toEqual(["hello"]);
    expect(server.problems).toEqual([]);
  });

  it("context is appended to the user message the model is sent, in this turn and the next", async () => {
    server.requests.length = 0;
    // Text blocks go to DeepSeek joined by newlines: the table is keyed by the joined message.
    server.table = { "fix the bug\nThe repository uses tabs.": answer("ok"), "and now?": answer("fine") };
    const c = await initialized({}, { hooks: ["prompt-submit"] }, undefined, deepseek.env(), "deepseek", "deepseek-chat");
    c.request("p", "session/prompt", promptParams("s", "fix the bug"));
    const request = await event(c, "s", "hook/request");
    c.request("h", "session/hook", hook("s", request.data.hookId, { context: "The repository uses tabs." }));
    const first = await c.response("p");
    expect(first.result.status, JSON.stringify(first.result)).toBe("ok");
    expect(userTexts(0)).toEqual(["fix the bug\nThe repository uses tabs."]);
    // The user/message event is what the client sent; the decision carries the context.
    expect(ofType(c, "s", "user/message")[0].data.content).toEqual([{ type: "text", text: "fix the bug" }]);
    expect(ofType(c, "s", "hook/decision")[0].data).toMatchObject({ context: "The repository uses tabs." });
    c.request("p2", "session/prompt", promptParams("s", "and now?"));
    const second = await event(c, "s", "hook/request", 2);
    c.request("h2", "session/hook", hook("s", second.data.hookId));
    expect((await c.response("p2")).result.status).toBe("ok");
    expect(userTexts(1)).toEqual(["fix the bug\nThe repository uses tabs.", "and now?"]);
    expect(server.problems).toEqual([]);
  });
});

describe("stop over the DeepSeek-shaped fake", () => {
  it("a continue after an exchange with tool calls is a history DeepSeek takes (reasoning_content kept where thinking mode needs it)", async () => {
    const server = new FakeDeepSeek();
    const url = await server.start();
    try {
      const reasoning = (text: string) => ({ delta: { role: "assistant", content: null, reasoning_content: text } });
      const usage = { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } };
      server.table = {
        "read a": [
          { events: [reasoning("read it"), { delta: { tool_calls: [{ index: 0, id: "call_r", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } }] } }, { delta: {}, finish_reason: "tool_calls" }, usage] },
          { events: [reasoning("done"), { delta: { content: "a says: contents of a" } }, { delta: {}, finish_reason: "stop" }, usage] },
        ],
        "say it in French": [{ events: [reasoning("ok"), { delta: { content: "a dit : contents of a" } }, { delta: {}, finish_reason: "stop" }, usage] }],
      };
      const c = await initialized({}, { hooks: ["stop"] }, undefined, fakeDeepSeekEnv(url), "deepseek", "deepseek-chat");
      c.request("p", "session/prompt", promptParams("s", "read a"));
      const first = await event(c, "s", "hook/request");
      c.request("h1", "session/hook", hook("s", first.data.hookId, { continue: "say it in French" }));
      const second = await event(c, "s", "hook/request", 2);
      expect(second.data.text).toBe("a dit : contents of a");
      c.request("h2", "session/hook", hook("s", second.data.hookId));
      expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
      expect(server.problems).toEqual([]);
      const last = server.requests[2].messages;
      expect(last.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
      expect(last[2].reasoning_content).toBe("read it");
    } finally {
      await server.stop();
    }
  });
});

describe("post-tool", () => {
  const readA = oneTurn({ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "done" });

  it("waits after the tool ran and before its result; context is appended to the result", async () => {
    const c = await initialized(readA, { hooks: ["post-tool"] });
    c.request("p", "session/prompt", promptParams("s"));
    const request = await event(c, "s", "hook/request");
    expect(request.data).toMatchObject({ hook: "post-tool", callId: "r", name: "read_file", arguments: { path: "a.txt" }, isError: false });
    expect(request.data.content[0].text).toContain("contents of a");
    expect(ofType(c, "s", "tool/result")).toEqual([]);
    c.request("h", "session/hook", hook("s", request.data.hookId, { context: "lint: 0 problems" }));
    expect((await c.response("p")).result.status).toBe("ok");
    const t = types(c, "s");
    expect(t.slice(t.indexOf("hook/request"), t.indexOf("tool/result") + 1)).toEqual(["hook/request", "hook/decision", "tool/result"]);
    const result = ofType(c, "s", "tool/result")[0].data;
    expect(result.content).toEqual([...request.data.content, { type: "text", text: "lint: 0 problems" }]);
    expect(result.isError).toBe(false);
  });

  it("content and isError replace the result", async () => {
    const c = await initialized(readA, { hooks: ["post-tool"] });
    c.request("p", "session/prompt", promptParams("s"));
    const request = await event(c, "s", "hook/request");
    c.request("h", "session/hook", hook("s", request.data.hookId, { content: [{ type: "text", text: "redacted" }], isError: true }));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "tool/result")[0].data).toMatchObject({ callId: "r", isError: true, content: [{ type: "text", text: "redacted" }] });
  });

  it("a call that never ran (unknown tool) meets no post-tool hook", async () => {
    const c = await initialized(oneTurn({ toolCalls: [{ id: "u", name: "no_such_tool" }] }, { text: "done" }), { hooks: ["post-tool"] });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "hook/request")).toEqual([]);
    expect(ofType(c, "s", "tool/result")[0].data.isError).toBe(true);
  });
});

describe("stop", () => {
  it("continue sends the text back as a user message and the turn goes on; {} completes it", async () => {
    const c = await initialized(oneTurn({ text: "all done" }, { text: "now really done" }), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const first = await event(c, "s", "hook/request");
    expect(first.data).toEqual({ hookId: expect.any(String), hook: "stop", text: "all done" });
    c.request("h", "session/hook", hook("s", first.data.hookId, { continue: "the tests fail: test_add" }));
    const second = await event(c, "s", "hook/request", 2);
    expect(second.data.text).toBe("now really done");
    c.request("h2", "session/hook", hook("s", second.data.hookId));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(types(c, "s")).toEqual([
      "user/message", "turn/start",
      "step/start", "assistant/message", "hook/request", "hook/decision",
      "step/start", "assistant/message", "hook/request", "hook/decision",
      "turn/end",
    ]);
    expect(ofType(c, "s", "hook/decision").map((e) => e.data)).toEqual([
      { hookId: first.data.hookId, hook: "stop", continue: "the tests fail: test_add" },
      { hookId: second.data.hookId, hook: "stop" },
    ]);
    expect(ofType(c, "s", "turn/end")).toHaveLength(1);
  });

  it("a stop hook that always continues ends the turn at maxSteps", async () => {
    const c = await initialized(oneTurn({ text: "done?" }, { text: "done!" }, { text: "done." }, { text: "never asked" }), { hooks: ["stop"], maxSteps: 3 });
    c.request("p", "session/prompt", promptParams("s"));
    for (let n = 1; n <= 3; n++) {
      const request = await event(c, "s", "hook/request", n);
      c.request(`h${n}`, "session/hook", hook("s", request.data.hookId, { continue: "not yet" }));
    }
    expect((await c.response("p")).result).toEqual({ status: "error", reason: { kind: "max-steps", limit: 3 } });
    expect(ofType(c, "s", "step/start")).toHaveLength(3);
  });

  it("is not asked when the step fails: only an answer ends a turn at the stop hook", async () => {
    const c = await initialized(oneTurn({ error: { message: "boom" } }), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result.reason.kind).toBe("model-error");
    expect(ofType(c, "s", "hook/request")).toEqual([]);
  });
});

describe("which sessions and waits", () => {
  it("a subagent's tool calls meet post-tool under the child's session id; stop is asked of the top-level turn only", async () => {
    const script = {
      turns: [{ steps: [{ toolCalls: [{ id: "t", name: "task", arguments: { prompt: "read a.txt" } }] }, { text: "parent done" }] }],
      subagent: { turns: [{ steps: [{ toolCalls: [{ id: "cr", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "child done" }] }] },
    };
    const c = await initialized(script, { hooks: ["post-tool", "stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const started = await c.waitFrame((f) => f.method === "subagent.started");
    const child = started.params.childSessionId;
    const childHook = await event(c, child, "hook/request");
    expect(childHook.data).toMatchObject({ hook: "post-tool", callId: "cr", name: "read_file" });
    c.request("h1", "session/hook", hook(child, childHook.data.hookId));
    const parentPost = await event(c, "s", "hook/request");
    expect(parentPost.data).toMatchObject({ hook: "post-tool", callId: "t", name: "task" });
    c.request("h2", "session/hook", hook("s", parentPost.data.hookId));
    const stop = await event(c, "s", "hook/request", 2);
    expect(stop.data).toMatchObject({ hook: "stop", text: "parent done" });
    c.request("h3", "session/hook", hook("s", stop.data.hookId));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, child, "hook/request").map((e) => e.data.hook)).toEqual(["post-tool"]);
  });

  it("a session/permission or session/tool_result carrying a hookId settles nothing; the hook still waits", async () => {
    const c = await initialized(turns([{ text: "done" }]), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "hook/request");
    c.request("perm", "session/permission", { sessionId: "s", requestId: data.hookId, decision: "allow" });
    expect((await c.response("perm")).error?.data?.kind).toBe("unknown-request");
    c.request("tool", "session/tool_result", { sessionId: "s", callId: data.hookId, content: [] });
    expect((await c.response("tool")).error?.data?.kind).toBe("unknown-call");
    expect(ofType(c, "s", "hook/decision")).toEqual([]);
    c.request("ok", "session/hook", hook("s", data.hookId));
    expect((await c.response("ok")).result).toEqual({});
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "hook/decision")).toHaveLength(1);
  });
});
