/** Chunk mapping: deltas, usage and finish reasons, as streamed by a server. */
import { describe, expect, it } from "vitest";
import { mapChunk } from "../../../src/providers/openai-compatible/index.js";
import { MAX_SERVER_LABEL, serverLabel } from "../../../src/providers/openai-compatible/chunks.js";
import { ModelError } from "../../../src/providers/types.js";
import { DONE, KEEP_ALIVE, chunk, deepseekUsage, frame, sseReply, usageChunk } from "../../support/fake-openai-server.js";
import { collect, collectError, isCompleteTail, makeProvider, okReply, pieces, reasoning, server, text, useFakeServer } from "./support.js";

useFakeServer();

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
      { type: "usage", usage: { inputTokens: 120, outputTokens: 40, reasoningTokens: 25, cacheHitTokens: 96, cacheMissTokens: 24 } },
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
      // The role chunk's id and model, announced with the first part that follows (not alone: see below).
      { type: "response-metadata", id: expect.stringMatching(/^fake-\d+$/), model: "deepseek-flash" },
      { type: "text-delta", text: "Let me look." },
      { type: "tool-call-delta", index: 0, id: "call_abc", name: "read_file", argumentsDelta: "" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"pa' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'th": "a.t' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'xt"}' },
      { type: "tool-call-delta", index: 1, id: "call_def", name: "glob", argumentsDelta: '{"pattern":"*"}' },
      { type: "usage", usage: { inputTokens: 50, outputTokens: 20, cacheHitTokens: 0, cacheMissTokens: 50 } },
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

  it("fails a stream that ends without a finish_reason or [DONE], and does not retry after output", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "partial" }))]), okReply());
    const { parts, error } = await collectError(await makeProvider());
    expect(text(parts)).toBe("partial");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toBe("the model stream ended before it finished");
    expect((error as ModelError).code).toBe("stream");
    expect(parts.some((p) => p.type === "finish")).toBe(false);
    expect(server.requests).toHaveLength(1);
  });

  it("infers the finish of a complete stream without finish_reason ([DONE] after output, as Snowflake Cortex sends): tool calls -> tool-calls, else stop", async () => {
    server.enqueue(
      sseReply([frame(chunk({ content: "all of it" })), frame(usageChunk(deepseekUsage(5, 3, 0))), DONE]),
      sseReply([frame(chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "glob", arguments: '{"pattern":"*"}' } }] })), DONE]),
    );
    const provider = await makeProvider();
    const first = await collect(provider);
    expect(text(first)).toBe("all of it");
    expect(first.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
    expect((await collect(provider)).at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" });
  });

  it("fails [DONE] without any output (usage alone is none); retried when nothing was yielded", async () => {
    server.enqueue(sseReply([DONE]), okReply(), sseReply([frame(usageChunk(deepseekUsage(5, 0, 0))), DONE]));
    const provider = await makeProvider();
    expect(text(await collect(provider))).toBe("ok");
    expect(server.requests).toHaveLength(2);
    const { error } = await collectError(provider);
    expect(error).toMatchObject({ name: "ModelError", code: "stream", message: "the model stream ended before it finished" });
    expect(server.requests).toHaveLength(3);
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

describe("mapChunk", () => {
  it("mapChunk reads OpenAI's cached_tokens when DeepSeek's field is absent", () => {
    expect(
      mapChunk({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } }).parts,
    ).toEqual([{ type: "usage", usage: { inputTokens: 9, outputTokens: 2, cacheHitTokens: 4 } }]);
  });

  it("takes only whole, non-negative, safe token counts (a server's 1e308 or -5 is no count, so a turn's sum never becomes Infinity, null on the wire)", () => {
    expect(mapChunk({ choices: [], usage: { prompt_tokens: 1e308, completion_tokens: -5 } }).parts).toEqual([]);
    expect(mapChunk({ choices: [], usage: { prompt_tokens: 2.5, completion_tokens: 3 } }).parts).toEqual([{ type: "usage", usage: { inputTokens: 0, outputTokens: 3 } }]);
  });

  it("reads reasoning streamed as delta.reasoning (OpenRouter, Groq, vLLM, Ollama); reasoning_content wins when both come", () => {
    expect(mapChunk(chunk({ reasoning: "think" })).parts).toEqual([{ type: "reasoning-delta", text: "think" }]);
    expect(mapChunk(chunk({ reasoning: "", content: "x" })).parts).toEqual([{ type: "text-delta", text: "x" }]);
    expect(mapChunk(chunk({ reasoning_content: "same", reasoning: "same" })).parts).toEqual([{ type: "reasoning-delta", text: "same" }]);
  });
  it("announces the response's id and model only with a part it yields anyway: a stream that dies after its role chunk is still retried, and the answer's own id wins", async () => {
    const answered = { id: "chatcmpl-second", model: "deepseek-v4-pro" };
    server.enqueue(
      sseReply([frame(chunk({ role: "assistant", content: "" }, null, { id: "chatcmpl-first", model: "deepseek-flash" }))], { then: "destroy" }),
      sseReply([frame(chunk({ role: "assistant", content: "" }, null, answered)), frame(chunk({ content: "ok" }, "stop", answered)), DONE]),
    );
    const parts = await collect(await makeProvider());
    expect(server.requests).toHaveLength(2);
    expect(parts).toEqual([{ type: "response-metadata", ...answered }, { type: "text-delta", text: "ok" }, { type: "finish", finishReason: "stop" }]);
  });

  it("keeps only the printable text of a server's id and model, cut at MAX_SERVER_LABEL code points", () => {
    expect(mapChunk({ id: "a\u001b[2Jb\u0000c\u202e\ud800", model: " \n\t ", choices: [] })).toEqual({ parts: [], finishReason: undefined, id: "a[2Jbc" });
    const emoji = "\u{1F600}".repeat(MAX_SERVER_LABEL + 5);
    expect(serverLabel(emoji)).toBe("\u{1F600}".repeat(MAX_SERVER_LABEL));
    expect(serverLabel(42)).toBeUndefined();
    expect(mapChunk({ model: "deepseek-v4-pro", choices: [] }).model).toBe("deepseek-v4-pro");
  });
});
