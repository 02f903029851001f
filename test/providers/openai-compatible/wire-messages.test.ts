/** The request body: history, tools and limits as sent. */
import { describe, expect, it } from "vitest";
import { deepseekProvider, openaiProvider } from "../../../src/providers/deepseek.js";
import { silentLogger } from "../../../src/log.js";
import { ProviderSettingError, type ModelRequest, type ToolChoice } from "../../../src/providers/types.js";
import { collect, collectError, makeProvider, okReply, request, server, testEnv, useFakeServer } from "./support.js";

useFakeServer();

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

  it("deepseek: system first, history mapped, reasoning_content on every assistant message of an exchange with tool calls (\"\" included), tools, usage, auth", async () => {
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
          content: "",
          reasoning_content: "I should read it.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
            { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path": "b.t' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "1\tA" },
        { role: "tool", tool_call_id: "call_2", content: "invalid arguments" },
        { role: "assistant", content: "Here it is.", reasoning_content: "done thinking" },
        { role: "user", content: "again" },
        { role: "assistant", content: "" },
        { role: "user", content: "and again" },
        {
          role: "assistant",
          content: "Partial",
          reasoning_content: "",
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
      content: "",
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

  it("an assistant message without text goes out as content \"\", never null (llama-cpp-python answers 500 to null)", async () => {
    const toolOnly: ModelRequest["messages"] = [
      { role: "user", content: [{ type: "text", text: "go" }] },
      { role: "assistant", content: [{ type: "tool-call", id: "t1", name: "read_file", arguments: { path: "a" } }] },
      { role: "tool", callId: "t1", name: "read_file", content: [{ type: "text", text: "A" }], isError: false },
    ];
    server.enqueue(okReply());
    const provider = await openaiProvider.create({ model: "m", cwd: "/tmp", env: { OPENAI_BASE_URL: server.url }, logger: silentLogger });
    await collect(provider, request({ model: "llama", messages: toolOnly }));
    expect(server.refusals).toEqual([]);
    expect(server.requests[0].body.messages[2]).toMatchObject({ role: "assistant", content: "" });
    expect(server.requests[0].rawBody).not.toContain('"content":null');
  });

  it("toolChoice goes out as tool_choice with tools (a name as a function choice), never without tools", async () => {
    const choices: Array<[ToolChoice, unknown]> = [
      ["auto", "auto"],
      ["required", "required"],
      ["none", "none"],
      [{ name: "read_file" }, { type: "function", function: { name: "read_file" } }],
    ];
    for (const [toolChoice, wire] of choices) {
      server.enqueue(okReply(), okReply());
      const provider = await deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), logger: silentLogger, toolChoice });
      await collect(provider, request({ tools }));
      await collect(provider, request());
      const [withTools, without] = server.requests.slice(-2);
      expect(withTools.body.tool_choice).toEqual(wire);
      expect("tool_choice" in without.body).toBe(false);
    }
    server.enqueue(okReply());
    await collect(await makeProvider(), request({ tools }));
    expect("tool_choice" in server.requests.at(-1)!.body).toBe(false);
  });

  it("required and a named tool force only a turn's first request; auto and none go with every request", async () => {
    const followUp: ModelRequest["messages"] = [
      { role: "user", content: [{ type: "text", text: "go" }] },
      { role: "assistant", content: [{ type: "tool-call", id: "t1", name: "read_file", arguments: { path: "a" } }] },
      { role: "tool", callId: "t1", name: "read_file", content: [{ type: "text", text: "A" }], isError: false },
    ];
    const choices: Array<[ToolChoice, boolean]> = [
      ["auto", true],
      ["none", true],
      ["required", false],
      [{ name: "read_file" }, false],
      // A name the follow-up does not offer is not an error there: nothing is forced.
      [{ name: "gone" }, false],
    ];
    for (const [toolChoice, onFollowUp] of choices) {
      server.enqueue(okReply());
      const provider = await deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), logger: silentLogger, toolChoice });
      await collect(provider, request({ tools, messages: followUp }));
      expect("tool_choice" in server.requests.at(-1)!.body).toBe(onFollowUp);
    }
  });

  it("a toolChoice naming a tool the request does not offer fails before sending; a malformed one is a setting error naming the field", async () => {
    const provider = await deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), logger: silentLogger, toolChoice: { name: "bash" } });
    const { error } = await collectError(provider, request({ tools }));
    expect(error).toMatchObject({ name: "ModelError", code: "tool-choice", message: expect.stringContaining("'bash'") });
    expect(server.requests).toHaveLength(0);
    for (const bad of ["always", { name: "" }, { name: "x", extra: 1 }, ["auto"]]) {
      const attempt = deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), toolChoice: bad as ToolChoice });
      await expect(attempt).rejects.toBeInstanceOf(ProviderSettingError);
      await expect(attempt).rejects.toMatchObject({ field: "toolChoice" });
    }
  });
});

describe("model settings", () => {
  it("deepseek: thinking, reasoning_effort and user_id go with every request, as DeepSeek names them", async () => {
    server.enqueue(okReply(), okReply());
    const provider = await deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), logger: silentLogger, thinking: "enabled", reasoningEffort: "max", user: "tenant-7" });
    await collect(provider, request());
    await collect(provider, request());
    for (const { body } of server.requests) {
      expect(body).toMatchObject({ thinking: { type: "enabled" }, reasoning_effort: "max", user_id: "tenant-7" });
      expect("user" in body).toBe(false);
    }
  });

  it("openai: the effort is passed on as given and the id goes as user; nothing is sent when nothing is set", async () => {
    server.enqueue(okReply(), okReply());
    const set = await openaiProvider.create({ model: "m", cwd: "/tmp", env: { OPENAI_BASE_URL: server.url }, logger: silentLogger, thinking: "disabled", reasoningEffort: "medium", user: "u1" });
    await collect(set, request());
    expect(server.requests[0].body).toMatchObject({ thinking: { type: "disabled" }, reasoning_effort: "medium", user: "u1" });
    expect("user_id" in server.requests[0].body).toBe(false);
    await collect(await makeProvider(), request());
    for (const field of ["thinking", "reasoning_effort", "user", "user_id"]) expect(field in server.requests[1].body).toBe(false);
  });

  it("deepseek refuses an effort it does not know, and an effort with thinking disabled, naming the field", async () => {
    for (const config of [{ reasoningEffort: "medium" }, { reasoningEffort: "high", thinking: "disabled" as const }]) {
      const attempt = deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), logger: silentLogger, ...config });
      await expect(attempt).rejects.toBeInstanceOf(ProviderSettingError);
      await expect(attempt).rejects.toMatchObject({ field: "reasoningEffort" });
    }
    expect(server.requests).toHaveLength(0);
  });
});
