/**
 * A real model, offline: the binary's `openai` provider against llama-cpp-python's
 * OpenAI-compatible server running Gemma 3 270M (both installed by scripts/setup-real-model.sh,
 * which scripts/setup.sh runs). Everything the fakes elsewhere imitate is real here: the
 * server's request validation, its chat template, its SSE framing of a streamed tool call,
 * and its answer to the follow-up that carries the tool result.
 *
 * It asserts protocol properties, not the model's cleverness: a tool call whose arguments
 * parsed as JSON, run and answered by a tool/result with the same id, a follow-up request
 * that carries that result and that the server answered 200, and a turn settled as the last
 * answer ended (`ok`, or `max-tokens` when the model ran past maxTokens).
 *
 * Required in CI (`CI` set, or HARNESS_REQUIRE_REAL_MODEL=1): there a missing server or model
 * fails the suite. Elsewhere it is skipped with a message saying how to install them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawClient, promptParams } from "../support/raw-client.js";
import {
  realModelMissing,
  realModelRequired,
  startLlamaServer,
  startRecordingReverseProxy,
  type LlamaServer,
  type RecordingReverseProxy,
} from "../support/llama-server.js";

const missing = realModelMissing();
const required = realModelRequired();
if (missing && !required) {
  process.stderr.write(`e2e-real-model: skipped, the real model is not installed: ${missing}\n`);
}

/**
 * The server's settings. The GGUF carries no chat template (llama-cpp-python would fall back to
 * `llama-2`, which knows no tools); `chatml-function-calling` renders the tools into the system
 * message and streams a tool call when `tool_choice` names the tool. The thread counts are
 * fixed so that greedy decoding gives the same tokens on every machine; n_ctx holds the
 * system prompt, the tool schema and the exchange with room to spare.
 */
const SERVER_ARGS = ["--chat_format", "chatml-function-calling", "--n_ctx", "4096", "--n_threads", "2", "--n_threads_batch", "2", "--seed", "7", "--verbose", "False"];

/**
 * The bridge sends no sampling parameters (a client cannot set them), and llama-cpp-python
 * samples at temperature 0.8 by default. The proxy adds greedy decoding and a seed to each
 * request that has none, so that the turn is the same on every run; it changes nothing else.
 */
const greedy = (body: any) => ({ temperature: 0, seed: 7, ...body });

const PROMPT = "Use the read_file tool to read notes.txt.";

/**
 * The workspace's path is in the system prompt, so a random one (mkdtemp) gave the model another
 * input on every run, and greedy decoding another answer: now and then a tool call whose
 * arguments copied the prompt's text and did not parse. One fixed path gives the same prompt
 * on every run (made afresh, removed after).
 */
const WORKSPACE = path.join(os.tmpdir(), "hb-real-model");

describe.skipIf(missing !== undefined && !required)("a real model (Gemma 3 270M on llama-cpp-python's server) through the openai provider", () => {
  let llama: LlamaServer | undefined;
  let proxy: RecordingReverseProxy | undefined;
  const ws = { dir: WORKSPACE };
  let client: RawClient | undefined;

  beforeAll(async () => {
    if (missing) return; // the test itself fails, saying what is missing
    fs.rmSync(WORKSPACE, { recursive: true, force: true });
    fs.mkdirSync(WORKSPACE);
    fs.writeFileSync(path.join(WORKSPACE, "notes.txt"), "The launch code is 4217.\n");
    llama = await startLlamaServer(SERVER_ARGS);
    proxy = await startRecordingReverseProxy(llama.baseUrl, greedy);
  }, 150_000);

  afterAll(async () => {
    await client?.dispose();
    await proxy?.stop();
    await llama?.stop();
    fs.rmSync(WORKSPACE, { recursive: true, force: true });
  });

  it("streams a tool call, runs it, sends the result back and settles the turn as the last answer ended", async () => {
    if (missing) expect.fail(`the real-model test is required here (CI or HARNESS_REQUIRE_REAL_MODEL=1), but ${missing}`);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      OPENAI_BASE_URL: proxy!.baseUrl,
      // A 5xx must show as what it is, at once, not after three backoffs.
      HARNESS_MAX_RETRIES: "0",
      // CPU inference on a shared machine: generous, but bounded.
      HARNESS_IDLE_TIMEOUT_MS: "60000",
    };
    delete env.OPENAI_API_KEY;
    client = new RawClient({ args: ["--stdio", "--no-session-log"], env });
    const c = client;
    // toolChoice names the tool: this server streams a tool call only then; the bridge forces it
    // on the turn's first request only, so the follow-up may answer in text and the turn ends.
    c.request("init", "initialize", {
      cwd: ws.dir,
      provider: "openai",
      model: "gemma-3-270m",
      permissionMode: "read-only",
      tools: ["read_file"],
      toolChoice: { name: "read_file" },
      maxSteps: 4,
      maxTokens: 64,
    });
    expect((await c.response("init")).error).toBeUndefined();

    c.request("p", "session/prompt", promptParams("real", PROMPT));
    // Up to four CPU-bound requests: minutes when the machine is busy (the rest of the suite runs beside it).
    const settled = await c.response("p", 400_000);
    const diagnosis = () =>
      JSON.stringify(
        {
          result: settled.result,
          exchanges: proxy!.exchanges.map((x) => ({ status: x.status, sent: x.body?.messages, response: x.response.slice(0, 2000) })),
          server: llama!.output().slice(-3000),
          bridge: c.stderr.slice(-2000),
        },
        null,
        1,
      );

    const events = c.events("real");
    const calls = events.filter((e) => e.type === "assistant/message").flatMap((e) => e.data.content.filter((b: any) => b.type === "tool-call"));
    const results = events.filter((e) => e.type === "tool/result").map((e) => e.data);
    expect(calls.length, diagnosis()).toBeGreaterThanOrEqual(1);
    const call = calls[0];
    // The streamed arguments parsed as a JSON object (rawArguments appears only when they did not).
    expect(call, diagnosis()).toMatchObject({ type: "tool-call", name: "read_file", id: expect.any(String) });
    expect(call.rawArguments, diagnosis()).toBeUndefined();
    expect(call.arguments, diagnosis()).toEqual(expect.objectContaining({ path: expect.any(String) }));
    // The tool ran and answered that call.
    expect(results[0], diagnosis()).toMatchObject({ callId: call.id, name: "read_file", isError: expect.any(Boolean) });
    expect(results[0].content.map((b: any) => b.text).join(""), diagnosis()).not.toBe("");

    // Every request the bridge made was answered 200; the follow-up carried the call and its result.
    const chats = proxy!.exchanges.filter((x) => x.url.endsWith("/chat/completions"));
    expect(chats.length, diagnosis()).toBeGreaterThanOrEqual(2);
    expect(
      chats.map((x) => x.status),
      diagnosis(),
    ).toEqual(chats.map(() => 200));
    const followUp: any[] = chats[1].body.messages;
    // Forced on the first request only (docs/providers.md, toolChoice).
    expect(chats[0].body.tool_choice, diagnosis()).toEqual({ type: "function", function: { name: "read_file" } });
    expect(chats[1].body.tool_choice, diagnosis()).toBeUndefined();
    const sentCall = followUp.find((m) => m.role === "assistant" && Array.isArray(m.tool_calls));
    expect(sentCall?.tool_calls[0], diagnosis()).toMatchObject({ id: call.id, type: "function", function: { name: "read_file" } });
    expect(JSON.parse(sentCall.tool_calls[0].function.arguments), diagnosis()).toEqual(call.arguments);
    expect(followUp.at(-1), diagnosis()).toMatchObject({ role: "tool", tool_call_id: call.id, content: expect.any(String) });
    // The answer to the follow-up was a complete event stream.
    expect(chats[1].response, diagnosis()).toMatch(/"finish_reason":\s*"(stop|tool_calls|length)"/);

    // The turn settled as the last answer ended, and said so last. The workspace's random name is
    // in the system prompt, so even greedy decoding may answer the follow-up past maxTokens on
    // some runs: a "length" finish is the model's, and it must settle as max-tokens, never ok.
    const lastFinish = [...chats.at(-1)!.response.matchAll(/"finish_reason":\s*"(\w+)"/g)].at(-1)?.[1];
    expect(["stop", "length"], diagnosis()).toContain(lastFinish);
    const reason = lastFinish === "length" ? { kind: "max-tokens" } : { kind: "completed" };
    expect(settled.result, diagnosis()).toEqual({ status: lastFinish === "length" ? "error" : "ok", reason });
    expect(events.at(-1), diagnosis()).toMatchObject({ type: "turn/end", data: { reason } });
    expect(c.badLines).toEqual([]);
  }, 420_000);
});
