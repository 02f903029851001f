import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { createStderrLogger, silentLogger } from "../../src/log.js";
import { deepseekProvider, openaiProvider } from "../../src/providers/deepseek.js";
import {
  backoffDelay,
  chatCompletionsUrl,
  mapChunk,
  parseRetryAfter,
} from "../../src/providers/openai-compatible/index.js";
import {
  ModelError,
  ProviderUnavailableError,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  type ProviderFactory,
} from "../../src/providers/types.js";
import {
  DONE,
  FakeOpenAIServer,
  KEEP_ALIVE,
  chunk,
  deepseekUsage,
  errorBody,
  frame,
  jsonReply,
  sseReply,
  startRecordingProxy,
  usageChunk,
  type RecordingProxy,
} from "../support/fake-openai-server.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const srcDir = path.resolve(here, "../../src/providers");

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

/** Fast retries and short timeouts unless a test overrides them. */
function testEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    DEEPSEEK_API_KEY: "sk-test-key",
    DEEPSEEK_BASE_URL: server.url,
    HARNESS_RETRY_BASE_MS: "1",
    HARNESS_RETRY_MAX_MS: "5",
    HARNESS_IDLE_TIMEOUT_MS: "5000",
    ...extra,
  };
}

async function makeProvider(extra: NodeJS.ProcessEnv = {}, factory: ProviderFactory = deepseekProvider): Promise<ModelProvider> {
  return factory.create({ model: "deepseek-v4-flash", cwd: "/tmp", env: testEnv(extra), logger: silentLogger });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "deepseek-v4-flash",
    system: "You are a test.",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    tools: [],
    sessionId: "s1",
    ...overrides,
  };
}

async function collect(provider: ModelProvider, req: ModelRequest = request(), signal = new AbortController().signal) {
  const parts: ModelStreamPart[] = [];
  for await (const part of provider.stream(req, signal)) parts.push(part);
  return parts;
}

/** Runs a stream to its end; returns the parts seen before it threw, and the error. */
async function collectError(provider: ModelProvider, req: ModelRequest = request(), signal = new AbortController().signal) {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of provider.stream(req, signal)) parts.push(part);
  } catch (error) {
    return { parts, error };
  }
  throw new Error(`the stream did not fail; parts: ${JSON.stringify(parts)}`);
}

const text = (parts: ModelStreamPart[]) =>
  parts.flatMap((p) => (p.type === "text-delta" ? [p.text] : [])).join("");
const reasoning = (parts: ModelStreamPart[]) =>
  parts.flatMap((p) => (p.type === "reasoning-delta" ? [p.text] : [])).join("");

/** Splits a string into `n` pieces of whole code points. */
function pieces(value: string, n: number): string[] {
  const chars = [...value];
  const size = Math.ceil(chars.length / n);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

/** True when the bytes end on the last byte of a UTF-8 character. */
function isCompleteTail(bytes: Uint8Array): boolean {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && (bytes[i] & 0xc0) === 0x80) {
    continuation++;
    i--;
  }
  if (i < 0) return false;
  const lead = bytes[i];
  const expected = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return continuation === expected;
}

/** A short successful stream. */
function okReply() {
  return sseReply([
    frame(chunk({ role: "assistant", content: "" })),
    frame(chunk({ content: "ok" })),
    frame(chunk({ content: "" }, "stop", { usage: deepseekUsage(10, 1, 0) })),
    DONE,
  ]);
}

describe("streaming", () => {
  it("decodes frames cut in the middle of UTF-8 characters, reasoning then text, with keep-alives and a usage-only chunk", async () => {
    const thought = "Überlegung: 日本語 🚀 ok";
    const answer = "héllo wörld — 🚀🚀 ✓";
    const frames = [
      KEEP_ALIVE,
      frame(chunk({ role: "assistant", content: null, reasoning_content: "" })),
      ...pieces(thought, 3).map((t) => frame(chunk({ content: null, reasoning_content: t }))),
      KEEP_ALIVE,
      ...pieces(answer, 4).map((t) => frame(chunk({ content: t, reasoning_content: null }))),
      frame(chunk({ content: "" }, "stop")),
      frame(usageChunk(deepseekUsage(120, 40, 96, 25))),
      DONE,
    ];
    // 5-byte slices, written apart: multi-byte characters are cut between two writes.
    const reply = sseReply(frames, { sliceBytes: 5, delayMs: 1 });
    const cutsInsideACharacter = reply.actions.filter((a) => {
      if (a.type !== "write" || typeof a.data === "string") return false;
      const last = a.data[a.data.length - 1];
      return last >= 0xc0 || (last >= 0x80 && !isCompleteTail(a.data));
    });
    expect(cutsInsideACharacter.length).toBeGreaterThan(3);
    server.enqueue(reply);
    const provider = await makeProvider();
    const parts = await collect(provider);

    expect(reasoning(parts)).toBe(thought);
    expect(text(parts)).toBe(answer);
    const firstText = parts.findIndex((p) => p.type === "text-delta");
    const lastReasoning = parts.map((p) => p.type).lastIndexOf("reasoning-delta");
    expect(lastReasoning).toBeLessThan(firstText);
    expect(parts.filter((p) => p.type === "usage")).toEqual([
      { type: "usage", usage: { inputTokens: 120, outputTokens: 40, reasoningTokens: 25, cacheHitTokens: 96 } },
    ]);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
    expect(parts.filter((p) => p.type === "finish")).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it("maps a tool call split over several deltas, with usage in the finishing chunk", async () => {
    server.enqueue(
      sseReply([
        frame(chunk({ role: "assistant", content: "" })),
        frame(chunk({ content: "Let me look." })),
        frame(
          chunk({
            tool_calls: [{ index: 0, id: "call_abc", type: "function", function: { name: "read_file", arguments: "" } }],
          }),
        ),
        frame(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] })),
        KEEP_ALIVE,
        frame(chunk({ tool_calls: [{ index: 0, function: { arguments: 'th": "a.t' } }] })),
        frame(chunk({ tool_calls: [{ index: 0, function: { arguments: 'xt"}' } }] })),
        frame(chunk({ tool_calls: [{ index: 1, id: "call_def", type: "function", function: { name: "glob", arguments: '{"pattern":"*"}' } }] })),
        frame(chunk({ content: "" }, "tool_calls", { usage: deepseekUsage(50, 20, 0) })),
        DONE,
      ]),
    );
    const parts = await collect(await makeProvider());
    expect(parts).toEqual([
      { type: "text-delta", text: "Let me look." },
      { type: "tool-call-delta", index: 0, id: "call_abc", name: "read_file", argumentsDelta: "" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"pa' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'th": "a.t' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'xt"}' },
      { type: "tool-call-delta", index: 1, id: "call_def", name: "glob", argumentsDelta: '{"pattern":"*"}' },
      { type: "usage", usage: { inputTokens: 50, outputTokens: 20, cacheHitTokens: 0 } },
      { type: "finish", finishReason: "tool-calls" },
    ]);
  });

  it("passes length as length and unknown finish reasons through raw", async () => {
    server.enqueue(
      sseReply([frame(chunk({ content: "a" })), frame(chunk({}, "length")), DONE]),
      sseReply([frame(chunk({ content: "b" })), frame(chunk({}, "insufficient_system_resource")), DONE]),
      sseReply([frame(chunk({}, "content_filter")), DONE]),
    );
    const provider = await makeProvider();
    expect((await collect(provider)).at(-1)).toEqual({ type: "finish", finishReason: "length" });
    expect((await collect(provider)).at(-1)).toEqual({ type: "finish", finishReason: "insufficient_system_resource" });
    expect((await collect(provider)).at(-1)).toEqual({ type: "finish", finishReason: "content_filter" });
  });

  it("ignores non-JSON data lines, unknown fields and other events' noise", async () => {
    server.enqueue(
      sseReply([
        KEEP_ALIVE,
        "data: this is not json\n\n",
        "garbage line without a colon\n\n",
        ": another comment\n\n",
        frame(chunk({ content: "still " })),
        "data: {\"truncated\": \n\n",
        "data:\n\n",
        frame(chunk({ content: "fine" })),
        frame(chunk({}, "stop")),
        DONE,
      ]),
    );
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("still fine");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
  });

  it("accepts a finished stream that closes without [DONE]", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "done" })), frame(chunk({}, "stop", { usage: deepseekUsage(3, 1, 0) }))]));
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("done");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
  });

  it("fails a stream that ends without a finish_reason, with or without [DONE], and does not retry after output", async () => {
    server.enqueue(
      sseReply([frame(chunk({ content: "partial" }))]),
      sseReply([frame(chunk({ content: "partial" })), DONE]),
    );
    const provider = await makeProvider();
    for (let i = 0; i < 2; i++) {
      const { parts, error } = await collectError(provider);
      expect(text(parts)).toBe("partial");
      expect(error).toBeInstanceOf(ModelError);
      expect((error as ModelError).message).toBe("the model stream ended before it finished");
      expect((error as ModelError).code).toBe("stream");
      expect(parts.some((p) => p.type === "finish")).toBe(false);
    }
    expect(server.requests).toHaveLength(2);
  });

  it("turns an error object inside the stream into a ModelError", async () => {
    server.enqueue(
      sseReply([frame(chunk({ content: "x" })), frame({ error: { message: "upstream overloaded", type: "server_error" } })], { then: "stall" }),
    );
    const { parts, error } = await collectError(await makeProvider());
    expect(text(parts)).toBe("x");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toContain("upstream overloaded");
    expect(server.requests).toHaveLength(1);
  });
});

describe("request body", () => {
  const tools = [
    {
      name: "read_file",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  ];
  const history: ModelRequest["messages"] = [
    { role: "user", content: [{ type: "text", text: "first" }, { type: "text", text: "second" }] },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "I should " },
        { type: "reasoning", text: "read it." },
        { type: "tool-call", id: "call_1", name: "read_file", arguments: { path: "a.txt" } },
        { type: "tool-call", id: "call_2", name: "read_file", arguments: {}, rawArguments: '{"path": "b.t' },
      ],
    },
    { role: "tool", callId: "call_1", name: "read_file", content: [{ type: "text", text: "1\tA" }], isError: false },
    { role: "tool", callId: "call_2", name: "read_file", content: [{ type: "text", text: "invalid arguments" }], isError: true },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "done thinking" },
        { type: "text", text: "Here " },
        { type: "text", text: "it is." },
      ],
    },
    { role: "user", content: [{ type: "text", text: "again" }] },
    // A step cancelled before any output.
    { role: "assistant", content: [] },
    { role: "user", content: [{ type: "text", text: "and again" }] },
    // A step cancelled during a tool call: partial text, the call got an error result.
    {
      role: "assistant",
      content: [
        { type: "text", text: "Partial" },
        { type: "tool-call", id: "call_3", name: "read_file", arguments: { path: "c" } },
      ],
    },
    { role: "tool", callId: "call_3", name: "read_file", content: [{ type: "text", text: "aborted" }], isError: true },
  ];

  it("deepseek: system first, history mapped, reasoning_content only with tool calls, tools, usage, auth", async () => {
    server.enqueue(okReply());
    const provider = await deepseekProvider.create({
      model: "ignored",
      cwd: "/tmp",
      env: testEnv({ DEEPSEEK_BASE_URL: `${server.url}/` }),
    });
    await collect(provider, request({ model: "deepseek-reasoner-x", messages: history, tools, maxTokens: 1234 }));

    const [recorded] = server.requests;
    expect(recorded.method).toBe("POST");
    expect(recorded.url).toBe("/chat/completions");
    expect(recorded.headers.authorization).toBe("Bearer sk-test-key");
    expect(recorded.headers["content-type"]).toContain("application/json");
    expect(recorded.body).toEqual({
      model: "deepseek-reasoner-x",
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 1234,
      messages: [
        { role: "system", content: "You are a test." },
        { role: "user", content: "first\nsecond" },
        {
          role: "assistant",
          content: null,
          reasoning_content: "I should read it.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
            { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path": "b.t' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "1\tA" },
        { role: "tool", tool_call_id: "call_2", content: "invalid arguments" },
        { role: "assistant", content: "Here it is." },
        { role: "user", content: "again" },
        { role: "assistant", content: "" },
        { role: "user", content: "and again" },
        {
          role: "assistant",
          content: "Partial",
          tool_calls: [{ id: "call_3", type: "function", function: { name: "read_file", arguments: '{"path":"c"}' } }],
        },
        { role: "tool", tool_call_id: "call_3", content: "aborted" },
      ],
      tools: [{ type: "function", function: tools[0] }],
    });
  });

  it("openai: no reasoning_content, /v1 base URL kept, no tools or max_tokens when not given, keyless with a base URL", async () => {
    server.enqueue(okReply(), okReply());
    const keyless = await openaiProvider.create({
      model: "m",
      cwd: "/tmp",
      env: { OPENAI_BASE_URL: `${server.url}/v1/`, HARNESS_RETRY_BASE_MS: "1" },
    });
    await collect(keyless, request({ model: "qwen3:8b", messages: history }));
    const withKey = await openaiProvider.create({
      model: "m",
      cwd: "/tmp",
      env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-openai", DEEPSEEK_API_KEY: "sk-wrong" },
    });
    await collect(withKey, request({ system: "" }));

    const [first, second] = server.requests;
    expect(first.url).toBe("/v1/chat/completions");
    expect(first.headers.authorization).toBeUndefined();
    expect(first.body.model).toBe("qwen3:8b");
    expect("tools" in first.body).toBe(false);
    expect("max_tokens" in first.body).toBe(false);
    expect(first.rawBody).not.toContain("reasoning_content");
    expect(first.body.messages[2]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
        { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path": "b.t' } },
      ],
    });
    expect(second.url).toBe("/v1/chat/completions");
    expect(second.headers.authorization).toBe("Bearer sk-openai");
    // An empty system prompt sends no system message.
    expect(second.body.messages).toEqual([{ role: "user", content: "hi" }]);
  });
});

describe("configuration", () => {
  it("deepseek without DEEPSEEK_API_KEY is unavailable, naming the variable", async () => {
    for (const env of [{}, { DEEPSEEK_API_KEY: "  " }, { DEEPSEEK_BASE_URL: "http://127.0.0.1:1" }]) {
      const attempt = deepseekProvider.create({ model: "m", cwd: "/tmp", env });
      await expect(attempt).rejects.toBeInstanceOf(ProviderUnavailableError);
      await expect(attempt).rejects.toThrow(/DEEPSEEK_API_KEY/);
    }
  });

  it("openai without a key is unavailable unless OPENAI_BASE_URL is set", async () => {
    const attempt = openaiProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "sk" } });
    await expect(attempt).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(attempt).rejects.toThrow(/OPENAI_API_KEY/);
    const provider = await openaiProvider.create({ model: "m", cwd: "/tmp", env: { OPENAI_BASE_URL: "http://127.0.0.1:8000/v1" } });
    expect(provider.name).toBe("openai");
  });

  it("rejects malformed base URLs and tuning variables, naming them", async () => {
    await expect(
      deepseekProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "k", DEEPSEEK_BASE_URL: "ftp://x" } }),
    ).rejects.toThrow(/DEEPSEEK_BASE_URL/);
    await expect(
      deepseekProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "k", HARNESS_IDLE_TIMEOUT_MS: "soon" } }),
    ).rejects.toThrow(/HARNESS_IDLE_TIMEOUT_MS/);
  });

  it("the factories' module loads neither undici nor eventsource-parser nor the implementation eagerly", () => {
    const valueImports = (file: string) =>
      fs
        .readFileSync(path.join(srcDir, file), "utf8")
        .split("\n")
        .filter((line) => /^\s*import\s/.test(line) && !/^\s*import\s+type\s/.test(line));
    expect(valueImports("deepseek.ts")).toEqual([]);
    const implFiles = fs.readdirSync(path.join(srcDir, "openai-compatible")).filter((f) => f.endsWith(".ts"));
    expect(implFiles).toContain("index.ts");
    const implImports = implFiles.flatMap((f) => valueImports(path.join("openai-compatible", f))).join("\n");
    expect(implImports).not.toMatch(/undici|eventsource-parser/);
  });

  it("chatCompletionsUrl strips trailing slashes and keeps /v1", () => {
    expect(chatCompletionsUrl("https://api.deepseek.com")).toBe("https://api.deepseek.com/chat/completions");
    expect(chatCompletionsUrl("https://api.deepseek.com/")).toBe("https://api.deepseek.com/chat/completions");
    expect(chatCompletionsUrl("https://api.deepseek.com/v1")).toBe("https://api.deepseek.com/v1/chat/completions");
    expect(chatCompletionsUrl("http://localhost:11434/v1//")).toBe("http://localhost:11434/v1/chat/completions");
  });
});

describe("faults", () => {
  it("retries a 500 before any output, then streams", async () => {
    server.enqueue(jsonReply(500, errorBody("internal", "server_error")), okReply());
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("ok");
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].rawBody).toBe(server.requests[0].rawBody);
  });

  it("retries a connection reset before any response", async () => {
    server.enqueue({ sendHeaders: false, actions: [{ type: "destroy" }] }, okReply());
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("ok");
    expect(server.requests).toHaveLength(2);
  });

  it("honours Retry-After: 0 and Retry-After: 1 on 429", async () => {
    const provider = await makeProvider({ HARNESS_RETRY_BASE_MS: "3000", HARNESS_RETRY_MAX_MS: "3000" });
    server.enqueue(jsonReply(429, errorBody("rate limited", "rate_limit"), { "retry-after": "0" }), okReply());
    let started = performance.now();
    expect(text(await collect(provider))).toBe("ok");
    // Backoff alone would have waited >= 1.5 s: Retry-After 0 overrides it.
    expect(performance.now() - started).toBeLessThan(1000);

    server.enqueue(jsonReply(429, errorBody("rate limited", "rate_limit"), { "retry-after": "1" }), okReply());
    started = performance.now();
    expect(text(await collect(provider))).toBe("ok");
    const gap = server.requests[3].receivedAt - server.requests[2].receivedAt;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(1500);
    expect(server.requests).toHaveLength(4);
  });

  it("caps Retry-After at HARNESS_RETRY_AFTER_MAX_MS", async () => {
    server.enqueue(jsonReply(503, errorBody("busy"), { "retry-after": "3600" }), okReply());
    const started = performance.now();
    expect(text(await collect(await makeProvider({ HARNESS_RETRY_AFTER_MAX_MS: "50" })))).toBe("ok");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("writes its retry warnings and debug lines through the logger it is given, prefixed with its name", async () => {
    server.enqueue(jsonReply(503, errorBody("busy")), sseReply(["data: not json\n\n", frame(chunk({ content: "ok" }, "stop"))]));
    const lines: string[] = [];
    const provider = await deepseekProvider.create({
      model: "m",
      cwd: "/tmp",
      env: testEnv({ HARNESS_LOG_LEVEL: "silent" }),
      logger: createStderrLogger("debug", (line) => lines.push(line)),
    });
    expect(text(await collect(provider))).toBe("ok");
    expect(lines.some((l) => l.startsWith("harness-bridge warn: provider deepseek: deepseek answered HTTP 503: busy; retry 1 of 3"))).toBe(true);
    expect(lines.some((l) => l.startsWith("harness-bridge debug: provider deepseek: ignored a non-JSON data line"))).toBe(true);
    expect(lines.some((l) => l.includes("without [DONE]"))).toBe(true);
  });

  it("gives up after the configured retries with the last status", async () => {
    server.enqueue(
      jsonReply(500, errorBody("boom 1", "server_error")),
      jsonReply(502, errorBody("boom 2", "server_error")),
      jsonReply(503, errorBody("boom 3", "server_error")),
      jsonReply(500, errorBody("boom 4", "server_error")),
    );
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).httpStatus).toBe(500);
    expect((error as ModelError).message).toContain("boom 4");
    expect((error as ModelError).message).toContain("3 retries");
    expect(server.requests).toHaveLength(4);
  });

  it("reports a 429 that outlasts the retries as rate-limit", async () => {
    const limited = () => jsonReply(429, errorBody("Rate limit reached", "rate_limit"), { "retry-after": "0" });
    server.enqueue(limited(), limited(), okReply());
    const { error } = await collectError(await makeProvider({ HARNESS_MAX_RETRIES: "1" }));
    expect(error).toMatchObject({ name: "ModelError", httpStatus: 429, code: "rate-limit" });
    expect((error as ModelError).message).toContain("Rate limit reached");
    expect(server.requests).toHaveLength(2);
  });

  it("does not retry a 401: the key was refused", async () => {
    server.enqueue(jsonReply(401, errorBody("Authentication Fails, Your api key: ****-key is invalid", "authentication_error")), okReply());
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toMatch(/API key was refused/);
    expect((error as ModelError).message).toContain("Authentication Fails");
    expect((error as ModelError).httpStatus).toBe(401);
    expect((error as ModelError).code).toBe("auth");
    expect(server.requests).toHaveLength(1);
  });

  it("maps a context-window 400 to code context-window, without retry", async () => {
    server.enqueue(
      jsonReply(
        400,
        errorBody(
          "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (140000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
        ),
      ),
    );
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("context-window");
    expect((error as ModelError).httpStatus).toBe(400);
    expect((error as ModelError).message).toContain("maximum context length is 131072");
    expect(server.requests).toHaveLength(1);
  });

  it("reports other HTTP errors with status and the server's message, without retry", async () => {
    server.enqueue(jsonReply(404, errorBody("Model Not Exist")), jsonReply(400, { message: "bad field" }));
    const provider = await makeProvider();
    let { error } = await collectError(provider);
    expect(error).toMatchObject({ name: "ModelError", httpStatus: 404, code: "http" });
    expect((error as ModelError).message).toContain("Model Not Exist");
    ({ error } = await collectError(provider));
    expect(error).toMatchObject({ httpStatus: 400, code: "http" });
    expect((error as ModelError).message).toContain("bad field");
    expect(server.requests).toHaveLength(2);
  });

  it("does not retry a connection reset after output", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "half an ans" }))], { then: "destroy" }), okReply());
    const { parts, error } = await collectError(await makeProvider());
    expect(text(parts)).toBe("half an ans");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("network");
    expect(server.requests).toHaveLength(1);
  });

  it("times out a stream that stalls after output, quickly and without retry", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "thinking..." }))], { then: "stall" }), okReply());
    const started = performance.now();
    const { parts, error } = await collectError(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "200" }));
    const elapsed = performance.now() - started;
    expect(text(parts)).toBe("thinking...");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("timeout");
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(2000);
    expect(server.requests).toHaveLength(1);
    await server.requests[0].socketClosed;
  });

  it("keep-alive comments keep a slow stream alive", async () => {
    const frames = [
      KEEP_ALIVE,
      KEEP_ALIVE,
      KEEP_ALIVE,
      KEEP_ALIVE,
      frame(chunk({ content: "late" })),
      frame(chunk({}, "stop")),
      DONE,
    ];
    server.enqueue(sseReply(frames, { delayMs: 120 }));
    const parts = await collect(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "250" }));
    expect(text(parts)).toBe("late");
  });

  it("retries a request that stalls before any output (no headers, then no body), then gives up with a timeout", async () => {
    server.enqueue({ sendHeaders: false, actions: [{ type: "stall" }] }, sseReply([KEEP_ALIVE], { then: "stall" }));
    const { error } = await collectError(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "150", HARNESS_MAX_RETRIES: "1" }));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("timeout");
    expect((error as ModelError).message).toContain("1 retry");
    expect(server.requests).toHaveLength(2);
  });

  it("stops at once when aborted mid-stream, and the server sees the socket close", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "first" }))], { then: "stall" }));
    const provider = await makeProvider();
    const controller = new AbortController();
    const iterator = provider.stream(request(), controller.signal)[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { type: "text-delta", text: "first" } });
    const pending = iterator.next();
    setTimeout(() => controller.abort(new Error("user cancelled")), 50);
    const started = performance.now();
    await expect(pending).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(500);
    let closed = false;
    await Promise.race([
      server.requests[0].socketClosed.then(() => (closed = true)),
      new Promise((resolve) => setTimeout(resolve, 1000)),
    ]);
    expect(closed).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("closes the HTTP stream when the consumer stops iterating", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "first" }))], { then: "stall" }));
    const provider = await makeProvider();
    for await (const part of provider.stream(request(), new AbortController().signal)) {
      expect(part).toEqual({ type: "text-delta", text: "first" });
      break;
    }
    let closed = false;
    await Promise.race([
      server.requests[0].socketClosed.then(() => (closed = true)),
      new Promise((resolve) => setTimeout(resolve, 1000)),
    ]);
    expect(closed).toBe(true);
  });

  it("aborts a retry's backoff sleep at once", async () => {
    server.enqueue(jsonReply(503, errorBody("busy"), { "retry-after": "30" }), okReply());
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user cancelled")), 100);
    const started = performance.now();
    const { error } = await collectError(await makeProvider(), request(), controller.signal);
    expect((error as Error).message).toBe("user cancelled");
    expect(performance.now() - started).toBeLessThan(1000);
    expect(server.requests).toHaveLength(1);
  });

  it("sends no request when aborted while the stream is starting", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "x" }))], { then: "stall" }));
    const controller = new AbortController();
    const iterator = (await makeProvider()).stream(request(), controller.signal)[Symbol.asyncIterator]();
    const first = iterator.next();
    controller.abort(new Error("cancelled early"));
    await expect(first).rejects.toThrow("cancelled early");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests).toHaveLength(0);
  });

  it("throws at once for an already aborted signal, without a request", async () => {
    const controller = new AbortController();
    controller.abort(new Error("too late"));
    const { error } = await collectError(await makeProvider(), request(), controller.signal);
    expect((error as Error).message).toBe("too late");
    expect(server.requests).toHaveLength(0);
  });
});

describe("proxy", () => {
  let proxy: RecordingProxy;
  beforeEach(async () => {
    proxy = await startRecordingProxy();
  });
  afterEach(async () => {
    await proxy.close();
  });

  it("goes through HTTP_PROXY from the bridge's environment", async () => {
    server.enqueue(okReply());
    const parts = await collect(await makeProvider({ HTTP_PROXY: proxy.url }));
    expect(text(parts)).toBe("ok");
    // undici tunnels with CONNECT, also for http:// targets.
    expect(proxy.connects).toEqual([`127.0.0.1:${server.port}`]);
    expect(proxy.forwards).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it("honours lowercase http_proxy and NO_PROXY", async () => {
    server.enqueue(okReply(), okReply());
    await collect(await makeProvider({ http_proxy: proxy.url }));
    expect(proxy.connects.length + proxy.forwards.length).toBe(1);
    await collect(await makeProvider({ http_proxy: proxy.url, NO_PROXY: "localhost,127.0.0.1" }));
    expect(proxy.connects.length + proxy.forwards.length).toBe(1);
    expect(server.requests).toHaveLength(2);
  });

  it("fails with a network error (after retries) when the proxy is unreachable", async () => {
    const deadUrl = proxy.url;
    await proxy.close();
    proxy = await startRecordingProxy();
    const { error } = await collectError(await makeProvider({ HTTP_PROXY: deadUrl, HARNESS_MAX_RETRIES: "1" }));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("network");
    expect(server.requests).toHaveLength(0);
  });
});

describe("pure helpers", () => {
  it("parseRetryAfter reads seconds and HTTP dates", () => {
    const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter("1.5", now)).toBe(1500);
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:28:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("backoffDelay grows exponentially with jitter, up to the cap", () => {
    expect(backoffDelay(0, 500, 8000, () => 0)).toBe(250);
    expect(backoffDelay(0, 500, 8000, () => 1)).toBe(500);
    expect(backoffDelay(2, 500, 8000, () => 1)).toBe(2000);
    expect(backoffDelay(10, 500, 8000, () => 1)).toBe(8000);
    expect(backoffDelay(10, 500, 8000, () => 0)).toBe(4000);
  });

  it("mapChunk reads OpenAI's cached_tokens when DeepSeek's field is absent", () => {
    expect(
      mapChunk({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } }).parts,
    ).toEqual([{ type: "usage", usage: { inputTokens: 9, outputTokens: 2, cacheHitTokens: 4 } }]);
  });
});
