/**
 * Provider fidelity through the built binary: what real OpenAI-compatible servers send and
 * refuse, against the local fakes, which refuse what the real servers refuse
 * (test/support/server-rules.ts). Each rule is stated with its source in docs/providers.md.
 */
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import type { ServerTable } from "../support/fake-deepseek.js";
import { DONE, FakeOpenAIServer, chunk, frame, sseReply } from "../support/fake-openai-server.js";
import { RawClient, promptParams } from "../support/raw-client.js";

const bridge = useDeepSeekBridge("hb-fidelity-", { HARNESS_MAX_RETRIES: "0", HARNESS_IDLE_TIMEOUT_MS: "5000" });
const deepseek = bridge.server;

const say = (text: string) => [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }];

/** A bridge on the `openai` route, against a fresh fake OpenAI-compatible server (closed with the client). */
async function openaiClient(): Promise<{ c: RawClient; fake: FakeOpenAIServer }> {
  const fake = await FakeOpenAIServer.start();
  const c = bridge.track(
    new RawClient({
      args: ["--stdio", "--no-session-log"],
      env: { ...process.env, OPENAI_BASE_URL: `${fake.url}/v1`, NO_PROXY: "127.0.0.1", no_proxy: "127.0.0.1", HARNESS_MAX_RETRIES: "0" },
    }),
  );
  const dispose = c.dispose.bind(c);
  c.dispose = async () => {
    await dispose();
    await fake.close();
  };
  c.request("init", "initialize", { cwd: bridge.dir, provider: "openai", model: "local-model" });
  expect((await c.response("init")).error).toBeUndefined();
  return { c, fake };
}

/** Prompts and waits for the answer. */
async function prompt(c: RawClient, session: string, text: string): Promise<any> {
  const id = `${session}-${c.frames.length}`;
  c.request(id, "session/prompt", promptParams(session, text));
  return (await c.response(id, 15_000)).result;
}

const OK = { status: "ok", reason: { kind: "completed" } };

describe("thinking mode: reasoning_content goes back on every assistant message of an exchange with tool calls", () => {
  it("a tool call streamed without any reasoning: the next request and the next turn are accepted", async () => {
    const c = await bridge.start();
    deepseek.table = {
      "List the files.": [
        {
          events: [
            { delta: { role: "assistant", content: null, tool_calls: [{ index: 0, id: "g1", type: "function", function: { name: "glob", arguments: '{"pattern": "*"}' } }] } },
            { delta: {}, finish_reason: "tool_calls" },
          ],
        },
        { events: [{ delta: { reasoning_content: "Nothing there." } }, ...say("The workspace is empty.")] },
      ],
      "And now?": [{ events: say("Still empty.") }],
    };
    expect(await prompt(c, "think-1", "List the files.")).toEqual(OK);
    expect(await prompt(c, "think-1", "And now?")).toEqual(OK);
    expect(deepseek.problems).toEqual([]);
    const last = deepseek.requests.at(-1)!.messages.filter((m) => m.role === "assistant");
    expect(last.map((m) => m.reasoning_content)).toEqual(["", "Nothing there."]);
  });
});

describe("usage: cache hits and misses", () => {
  it("maps prompt_cache_hit_tokens and prompt_cache_miss_tokens per step and sums them over the turn", async () => {
    const c = await bridge.start();
    const usage = (prompt: number, hit: number) => ({
      usage: { prompt_tokens: prompt, completion_tokens: 3, total_tokens: prompt + 3, prompt_cache_hit_tokens: hit, prompt_cache_miss_tokens: prompt - hit },
    });
    deepseek.table = {
      "Count twice.": [
        {
          events: [
            { delta: { reasoning_content: "Glob first.", tool_calls: [{ index: 0, id: "u1", type: "function", function: { name: "glob", arguments: '{"pattern":"*"}' } }] } },
            { delta: {}, finish_reason: "tool_calls" },
            usage(100, 0),
          ],
        },
        { events: [...say("Done."), usage(130, 100)] },
      ],
    };
    expect(await prompt(c, "usage-1", "Count twice.")).toEqual(OK);
    const events = c.events("usage-1");
    const steps = events.filter((e) => e.type === "assistant/message").map((e) => e.data.usage);
    // The token counts (each usage also carries its costUsd, from the price table: e2e-cost.test.ts).
    expect(steps).toMatchObject([
      { inputTokens: 100, outputTokens: 3, cacheHitTokens: 0, cacheMissTokens: 100 },
      { inputTokens: 130, outputTokens: 3, cacheHitTokens: 100, cacheMissTokens: 30 },
    ]);
    expect(events.find((e) => e.type === "turn/end").data.usage).toMatchObject({ inputTokens: 230, outputTokens: 6, cacheHitTokens: 100, cacheMissTokens: 130 });
  });
});

describe("no endless wait: keep-alive comments do not hold a turn forever", () => {
  it.each<[string, ServerTable[string][number], Record<string, string>, string]>([
    ["only keep-alives (a queued request)", { events: [], stall: true, keepAliveMs: 50 }, { HARNESS_FIRST_TOKEN_TIMEOUT_MS: "3000" }, "first-token-timeout"],
    [
      "output, then keep-alives forever",
      { events: [{ delta: { role: "assistant", content: "Working" } }], stall: true, keepAliveMs: 50 },
      { HARNESS_REQUEST_TIMEOUT_MS: "3000" },
      "request-timeout",
    ],
  ])("%s: the turn ends with a model error of its own code, the session goes on", async (name, entry, tuning, code) => {
    // Keep-alives every 50 ms re-arm the idle timer (1.5 s: room for a busy machine's stalls),
    // so only the longer deadline can end the turn, with its own code.
    const c = await bridge.start({ HARNESS_IDLE_TIMEOUT_MS: "1500", ...tuning });
    deepseek.table = { [name]: [entry], "Still there?": [{ events: say("Yes.") }] };
    const result = await prompt(c, `wait-${code}`, name);
    expect(result).toEqual({ status: "error", reason: { kind: "model-error", code, message: expect.stringContaining("3000 ms") } });
    expect(await prompt(c, `wait-${code}`, "Still there?")).toEqual(OK);
    expect(deepseek.problems).toEqual([]);
  });
});

describe("reasoning streamed as delta.reasoning", () => {
  it("is surfaced as reasoning, and kept in the partial message when the stream then reports an error", async () => {
    const c = await bridge.start();
    deepseek.table = {
      "Think aloud.": [{ events: [{ delta: { role: "assistant", reasoning: "Step one, " } }, { delta: { reasoning: "step two." } }, ...say("Answer.")] }],
      "Think and fail.": [{ events: [{ delta: { reasoning: "Half a thought" } }, { raw: 'data: {"error": {"message": "upstream overloaded", "type": "server_error"}}\n\n' }] }],
    };
    expect(await prompt(c, "reason-1", "Think aloud.")).toEqual(OK);
    const message = c.events("reason-1").find((e) => e.type === "assistant/message");
    expect(message.data.content).toEqual([
      { type: "reasoning", text: "Step one, step two." },
      { type: "text", text: "Answer." },
    ]);
    const chunks = c.events("reason-1").filter((e) => e.type === "assistant/chunk").map((e) => e.data.chunk);
    expect(chunks[0]).toEqual({ type: "reasoning-delta", text: "Step one, " });

    const failed = await prompt(c, "reason-2", "Think and fail.");
    expect(failed).toMatchObject({ status: "error", reason: { kind: "model-error", message: expect.stringContaining("upstream overloaded") } });
    const partial = c.events("reason-2").find((e) => e.type === "assistant/message");
    expect(partial.data).toMatchObject({ finishReason: "error", content: [{ type: "reasoning", text: "Half a thought" }] });
  });
});

describe("a complete stream without finish_reason ([DONE] after output, as Snowflake Cortex sends)", () => {
  it("ends its steps as tool-calls and stop, inferred from what was streamed; without [DONE] it stays an error", async () => {
    const { c, fake } = await openaiClient();
    const call = { index: 0, id: "cx1", type: "function", function: { name: "glob", arguments: '{"pattern":"*.none"}' } };
    fake.enqueue(
      sseReply([frame(chunk({ role: "assistant", content: "" })), frame(chunk({ tool_calls: [call] })), DONE]),
      sseReply([frame(chunk({ content: "Nothing matches." })), DONE]),
      sseReply([frame(chunk({ content: "cut sho" }))]),
    );
    expect(await prompt(c, "cortex-1", "Find them.")).toEqual(OK);
    const messages = c.events("cortex-1").filter((e) => e.type === "assistant/message").map((e) => e.data);
    expect(messages.map((m) => m.finishReason)).toEqual(["tool-calls", "stop"]);
    expect(c.events("cortex-1").filter((e) => e.type === "tool/result").map((e) => e.data.name)).toEqual(["glob"]);
    const cut = await prompt(c, "cortex-2", "Again.");
    expect(cut).toMatchObject({ status: "error", reason: { kind: "model-error", code: "stream", message: "the model stream ended before it finished" } });
  });
});

describe("assistant tool-call messages without text", () => {
  it("go back with content \"\", which llama-cpp-python's server takes (it answers 500 to null)", async () => {
    const { c, fake } = await openaiClient();
    const call = { index: 0, id: "n1", type: "function", function: { name: "glob", arguments: '{"pattern":"*.none"}' } };
    fake.enqueue(
      sseReply([frame(chunk({ role: "assistant", content: null, tool_calls: [call] })), frame(chunk({}, "tool_calls")), DONE]),
      sseReply([frame(chunk({ content: "No such files." })), frame(chunk({}, "stop")), DONE]),
    );
    expect(await prompt(c, "null-1", "Look.")).toEqual(OK);
    expect(fake.refusals).toEqual([]);
    expect(fake.requests[1].body.messages.find((m: { role: string }) => m.role === "assistant")).toMatchObject({ content: "", tool_calls: [{ id: "n1" }] });
  });
});

describe("tool-call arguments go back exactly as the model sent them", () => {
  it("keeps the model's text (spaces and all) in the message and sends it back verbatim, also after a resume", async () => {
    const root = path.join(bridge.dir, ".sessions-args");
    const c = await bridge.start({}, ["--stdio", "--session-root", root]);
    const args = '{"pattern":  "*.txt" ,\n "path": "."}';
    deepseek.table = {
      "Glob it.": [
        {
          events: [
            { delta: { reasoning_content: "Glob.", tool_calls: [{ index: 0, id: "a1", type: "function", function: { name: "glob", arguments: args.slice(0, 9) } }] } },
            { delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(9) } }] } },
            { delta: {}, finish_reason: "tool_calls" },
          ],
        },
        { events: say("None.") },
      ],
      "Once more.": [{ events: say("Still none.") }],
    };
    expect(await prompt(c, "args-1", "Glob it.")).toEqual(OK);
    const call = c.events("args-1").find((e) => e.type === "assistant/message").data.content.find((b: { type: string }) => b.type === "tool-call");
    expect(call).toEqual({ type: "tool-call", id: "a1", name: "glob", arguments: { pattern: "*.txt", path: "." }, argumentsText: args });
    // A new bridge resumes the session from its log.
    await c.dispose();
    const resumed = await bridge.start({}, ["--stdio", "--session-root", root]);
    expect(await prompt(resumed, "args-1", "Once more.")).toEqual(OK);
    for (const request of deepseek.requests.slice(1)) {
      const sent = request.messages.find((m) => m.role === "assistant" && m.tool_calls)!;
      expect((sent.tool_calls as Array<{ function: { arguments: string } }>)[0].function.arguments).toBe(args);
    }
    expect(deepseek.requests).toHaveLength(3);
  });
});
