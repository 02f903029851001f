/**
 * `initialize`'s model settings through the built binary: thinking, reasoningEffort and user
 * (shared/PROTOCOL.md "Model settings"), toolChoice and the model deadlines (docs/PROTOCOL.md).
 * The fakes refuse the settings DeepSeek refuses (test/support/server-rules.ts), so a test
 * passes only with a body the real API takes.
 */
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import { FakeOpenAIServer, chunk, frame, sseReply, DONE } from "../support/fake-openai-server.js";
import { RawClient, promptParams } from "../support/raw-client.js";

const bridge = useDeepSeekBridge("hb-settings-", { HARNESS_MAX_RETRIES: "0", HARNESS_IDLE_TIMEOUT_MS: "5000" });
const deepseek = bridge.server;

const say = (text: string) => [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }];
const OK = { status: "ok", reason: { kind: "completed" } };

async function prompt(c: RawClient, session: string, text: string): Promise<any> {
  const id = `${session}-${c.frames.length}`;
  c.request(id, "session/prompt", promptParams(session, text));
  return (await c.response(id, 15_000)).result;
}

/** A bridge on the deepseek route, not yet initialized. */
function bare(): RawClient {
  return bridge.track(
    new RawClient({
      args: ["--stdio", "--no-session-log"],
      env: { ...process.env, DEEPSEEK_API_KEY: "sk-test-not-a-real-key", DEEPSEEK_BASE_URL: "http://127.0.0.1:9", NO_PROXY: "127.0.0.1" },
    }),
  );
}

describe("deepseek: thinking, reasoningEffort and user go out as DeepSeek names them", () => {
  it("on every request of a turn with a tool call, and the API's rules are met", async () => {
    const c = await bridge.start({}, undefined, { thinking: "enabled", reasoningEffort: "max", user: "tenant_42" });
    deepseek.table = {
      "Look around.": [
        {
          events: [
            { delta: { reasoning_content: "Glob.", tool_calls: [{ index: 0, id: "m1", type: "function", function: { name: "glob", arguments: '{"pattern":"*"}' } }] } },
            { delta: {}, finish_reason: "tool_calls" },
          ],
        },
        { events: say("Nothing here.") },
      ],
    };
    expect(await prompt(c, "settings-1", "Look around.")).toEqual(OK);
    expect(deepseek.problems).toEqual([]);
    expect(deepseek.requests).toHaveLength(2);
    for (const body of deepseek.requests) {
      expect(body).toMatchObject({ thinking: { type: "enabled" }, reasoning_effort: "max", user_id: "tenant_42" });
      expect("user" in body).toBe(false);
    }
  });

  it("thinking disabled: the request says so, and no effort is sent", async () => {
    const c = await bridge.start({}, undefined, { thinking: "disabled" });
    deepseek.table = { "Quick.": [{ events: say("Done.") }] };
    expect(await prompt(c, "settings-2", "Quick.")).toEqual(OK);
    expect(deepseek.requests[0]).toMatchObject({ thinking: { type: "disabled" } });
    expect("reasoning_effort" in deepseek.requests[0]).toBe(false);
  });

  it("without settings nothing is added (the API's defaults: thinking on, effort high)", async () => {
    const c = await bridge.start();
    deepseek.table = { "Plain.": [{ events: say("Done.") }] };
    expect(await prompt(c, "settings-3", "Plain.")).toEqual(OK);
    for (const field of ["thinking", "reasoning_effort", "user_id", "user", "tool_choice"]) expect(field in deepseek.requests[0]).toBe(false);
  });
});

describe("settings the provider cannot take are refused at initialize with -32602, and the bridge goes on serving", () => {
  it.each<[string, Record<string, unknown>, string]>([
    ["an effort DeepSeek does not list", { reasoningEffort: "medium" }, "params.reasoningEffort: the deepseek provider takes 'low', 'high', 'max'"],
    ["an effort with thinking disabled", { reasoningEffort: "low", thinking: "disabled" }, "params.reasoningEffort: has no effect"],
    ["a thinking mode that does not exist", { thinking: "off" }, "params.thinking"],
    ["a user id over 512 bytes", { user: "é".repeat(257) }, "params.user: must be at most 512 bytes"],
    ["a user id with a newline", { user: "a\nb" }, "params.user: must not contain control characters"],
    ["an effort that is not a word", { reasoningEffort: "hi gh" }, "params.reasoningEffort"],
    ["a tool choice of unknown shape", { toolChoice: { name: "glob", strict: true } }, "params.toolChoice"],
    ["a negative deadline", { firstTokenTimeoutMs: -1 }, "params.firstTokenTimeoutMs"],
    ["a permission mode that does not exist", { permissionMode: "bogus" },
      "params.permissionMode: must be one of 'read-only', 'workspace-write', 'full' (permission_mode= in the Python SDK)"],
  ])("%s", async (_name, init, message) => {
    const c = bare();
    c.request("bad", "initialize", { cwd: bridge.dir, provider: "deepseek", model: "deepseek-flash", ...init });
    const bad = await c.response("bad");
    expect(bad.error).toMatchObject({ code: -32602, message: expect.stringContaining(message), data: { kind: "invalid-params" } });
    c.request("good", "initialize", { cwd: bridge.dir, provider: "deepseek", model: "deepseek-flash" });
    expect((await c.response("good")).error).toBeUndefined();
  });
});

describe("openai: the effort is passed on as given, the id goes as user", () => {
  it("reaches the server on every request", async () => {
    const fake = await FakeOpenAIServer.start();
    try {
      const c = bridge.track(
        new RawClient({
          args: ["--stdio", "--no-session-log"],
          env: { ...process.env, OPENAI_BASE_URL: `${fake.url}/v1`, NO_PROXY: "127.0.0.1", no_proxy: "127.0.0.1", HARNESS_MAX_RETRIES: "0" },
        }),
      );
      c.request("init", "initialize", { cwd: bridge.dir, provider: "openai", model: "local", reasoningEffort: "medium", user: "u-1" });
      expect((await c.response("init")).error).toBeUndefined();
      fake.enqueue(sseReply([frame(chunk({ role: "assistant", content: "Hi." })), frame(chunk({}, "stop")), DONE]));
      expect(await prompt(c, "oa-1", "Hello.")).toEqual(OK);
      expect(fake.requests[0].body).toMatchObject({ reasoning_effort: "medium", user: "u-1" });
      expect("user_id" in fake.requests[0].body).toBe(false);
      await c.dispose();
    } finally {
      await fake.close();
    }
  });
});

describe("toolChoice: a named tool is forced on a turn's first request only, so the turn can end", () => {
  it("names the tool on the first step and leaves it off the follow-up; the turn settles ok", async () => {
    const c = await bridge.start({}, undefined, { toolChoice: { name: "glob" } });
    deepseek.table = {
      "Find files.": [
        {
          events: [
            { delta: { reasoning_content: "", tool_calls: [{ index: 0, id: "f1", type: "function", function: { name: "glob", arguments: '{"pattern":"*.none"}' } }] } },
            { delta: {}, finish_reason: "tool_calls" },
          ],
        },
        { events: say("None.") },
      ],
    };
    expect(await prompt(c, "choice-1", "Find files.")).toEqual(OK);
    expect(deepseek.requests.map((r) => r.tool_choice)).toEqual([{ type: "function", function: { name: "glob" } }, undefined]);
  });

  it("a name the offered tools lack ends the turn with a model error of code tool-choice, sending nothing", async () => {
    const c = await bridge.start({}, undefined, { toolChoice: { name: "no_such_tool" } });
    const result = await prompt(c, "choice-2", "Anything.");
    expect(result).toMatchObject({ status: "error", reason: { kind: "model-error", code: "tool-choice", message: expect.stringContaining("'no_such_tool'") } });
    expect(deepseek.requests).toHaveLength(0);
  });
});

describe("the model deadlines are set at initialize, over the environment", () => {
  it("firstTokenTimeoutMs ends a queued request (keep-alives only) with first-token-timeout", async () => {
    // Keep-alives every 50 ms re-arm the idle timer (1.5 s: room for a busy machine's stalls).
    const c = await bridge.start({ HARNESS_FIRST_TOKEN_TIMEOUT_MS: "600000", HARNESS_IDLE_TIMEOUT_MS: "1500" }, undefined, { firstTokenTimeoutMs: 2500 });
    deepseek.table = { "Queued.": [{ events: [], stall: true, keepAliveMs: 50 }] };
    const result = await prompt(c, "deadline-1", "Queued.");
    expect(result).toEqual({ status: "error", reason: { kind: "model-error", code: "first-token-timeout", message: expect.stringContaining("2500 ms") } });
  });

  it("modelRequestTimeoutMs ends a request that streams, then only keeps alive, with request-timeout", async () => {
    const c = await bridge.start({ HARNESS_IDLE_TIMEOUT_MS: "1500" }, undefined, { modelRequestTimeoutMs: 2500 });
    deepseek.table = { "Slow.": [{ events: [{ delta: { role: "assistant", content: "Working" } }], stall: true, keepAliveMs: 50 }] };
    const result = await prompt(c, "deadline-2", "Slow.");
    expect(result).toEqual({ status: "error", reason: { kind: "model-error", code: "request-timeout", message: expect.stringContaining("2500 ms") } });
  });
});
