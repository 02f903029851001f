/**
 * The scripted provider picks its step, and computes its default usage, from the request's
 * history alone. It keeps a tally per history array and reads only the messages added since the
 * last request: whatever order requests come in, the answer must be the one a fresh copy of the
 * same history gets.
 */
import { describe, expect, it } from "vitest";
import { SCRIPTED_DELAY_VAR, ScriptedProvider, scriptedProvider, type Script } from "../../src/providers/scripted.js";
import type { ModelMessage, ModelRequest } from "../../src/providers/types.js";

const script: Script = {
  turns: [
    { steps: [{ toolCalls: [{ id: "t1", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "first answer" }] },
    { steps: [{ text: "second answer" }] },
  ],
};

async function answer(provider: ScriptedProvider, messages: ModelMessage[]): Promise<{ text: string; calls: number; inputTokens?: number }> {
  const request: ModelRequest = { model: "test", system: "", messages, tools: [], sessionId: "s" };
  let text = "";
  let calls = 0;
  let inputTokens: number | undefined;
  for await (const batch of provider.stream(request, new AbortController().signal)) {
    for (const part of batch) {
      if (part.type === "text-delta") text += part.text;
      if (part.type === "tool-call-delta" && part.name) calls++;
      if (part.type === "usage") inputTokens = part.usage.inputTokens;
    }
  }
  return { text, calls, inputTokens };
}

const user = (text: string): ModelMessage => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string): ModelMessage => ({ role: "assistant", content: [{ type: "text", text }] });

describe("the scripted provider's view of a history", () => {
  it("a history that grows between requests gets what a fresh copy of it gets", async () => {
    const provider = new ScriptedProvider(script);
    const history: ModelMessage[] = [user("x".repeat(40))];
    const growing: Array<Awaited<ReturnType<typeof answer>>> = [];
    const fresh: Array<Awaited<ReturnType<typeof answer>>> = [];
    const record = async () => {
      growing.push(await answer(provider, history));
      fresh.push(await answer(new ScriptedProvider(script), [...history]));
    };
    await record(); // turn 1, step 1: the tool call
    history.push({ role: "assistant", content: [{ type: "tool-call", id: "t1", name: "read_file", arguments: { path: "a.txt" } }] });
    history.push({ role: "tool", callId: "t1", name: "read_file", content: [{ type: "text", text: "y".repeat(80) }], isError: false });
    await record(); // turn 1, step 2
    history.push(assistant("first answer"), user("again"));
    await record(); // turn 2
    expect(growing).toEqual(fresh);
    expect(growing.map((a) => [a.calls, a.text])).toEqual([
      [1, ""],
      [0, "first answer"],
      [0, "second answer"],
    ]);
    // The default usage counts every character of the history so far (a quarter of them).
    expect(growing.map((a) => a.inputTokens)).toEqual([10, 10 + Math.ceil((JSON.stringify({ path: "a.txt" }).length + 80) / 4), expect.any(Number)]);
    expect(growing[2].inputTokens).toBe(Math.ceil((40 + JSON.stringify({ path: "a.txt" }).length + 80 + "first answer".length + "again".length) / 4));
  });

  it("a history changed in place, not only appended to, is counted anew", async () => {
    const provider = new ScriptedProvider(script);
    const history: ModelMessage[] = [user("hello"), assistant("first answer"), user("again")];
    expect((await answer(provider, history)).text).toBe("second answer");
    // Shorter than what was counted: the same array now holds one turn.
    history.splice(0, history.length, user("fresh start"));
    const shorter = await answer(provider, history);
    expect(shorter.calls).toBe(1);
    expect(shorter.inputTokens).toBe(Math.ceil("fresh start".length / 4));
    // Longer, but not an extension of it: three user messages, the third turn (turns[2 % 2]).
    history.splice(0, history.length, user("a"), assistant("first answer"), user("b"), user("c"));
    const longer = await answer(provider, history);
    expect(longer.calls).toBe(1);
    expect(longer.inputTokens).toBe(Math.ceil((1 + "first answer".length + 1 + 1) / 4));
  });
});

describe("HARNESS_SCRIPTED_DELAY_MS", () => {
  const request: ModelRequest = { model: "test", system: "", messages: [user("go")], tools: [], sessionId: "s" };
  const paced: Script = { turns: [{ steps: [{ text: "paced" }] }] };

  /** Starts the stream, aborts at once, and says whether the first chunk still came. */
  async function firstChunkBeforeAbort(provider: { stream: ScriptedProvider["stream"] }): Promise<boolean> {
    const controller = new AbortController();
    const stream = provider.stream(request, controller.signal)[Symbol.asyncIterator]();
    const first = stream.next();
    controller.abort(new Error("cancelled"));
    return first.then(
      () => true,
      () => false,
    );
  }

  it("waits before each chunk of a step that names no delayMs, and the wait ends on abort", async () => {
    const provider = await scriptedProvider.create({ model: "demo", cwd: "/tmp", env: { [SCRIPTED_DELAY_VAR]: "60000" } });
    expect(await firstChunkBeforeAbort(provider)).toBe(false);
    // Without it the first chunk is already on its way when the abort comes.
    expect(await firstChunkBeforeAbort(new ScriptedProvider(paced))).toBe(true);
  });

  it("a step's own delayMs wins", async () => {
    const provider = new ScriptedProvider({ turns: [{ steps: [{ text: "now", delayMs: 0 }] }] }, 60_000);
    expect(await firstChunkBeforeAbort(provider)).toBe(true);
  });

  it.each(["soon", "-1", " ", "60001", "Infinity"])("%j is refused, naming the variable", async (value) => {
    await expect(Promise.resolve().then(() => scriptedProvider.create({ model: "demo", cwd: "/tmp", env: { [SCRIPTED_DELAY_VAR]: value } }))).rejects.toThrow(
      new RegExp(`${SCRIPTED_DELAY_VAR} must be a number of milliseconds`),
    );
  });
});

describe("a step's text in chunks", () => {
  async function chunks(text: string, chunkSize?: number): Promise<string[]> {
    const provider = new ScriptedProvider({ turns: [{ steps: [{ text, chunkSize }] }] });
    const request: ModelRequest = { model: "test", system: "", messages: [user("go")], tools: [], sessionId: "s" };
    const out: string[] = [];
    for await (const batch of provider.stream(request, new AbortController().signal)) {
      for (const part of batch) if (part.type === "text-delta") out.push(part.text);
    }
    return out;
  }

  it.each([
    ["", 4, []],
    ["hi", 4, ["hi"]],
    ["abcd", 4, ["abcd"]],
    ["abcde", 4, ["abcd", "e"]],
    // Chunks are cut by code points: an emoji (two UTF-16 units) is never split.
    ["a😀b", 2, ["a😀", "b"]],
    ["😀😀", 4, ["😀😀"]],
    ["😀😀😀", 2, ["😀😀", "😀"]],
  ])("%j by %i code points: %j", async (text, size, expected) => {
    expect(await chunks(text as string, size as number)).toEqual(expected);
  });

  it("a text longer than the default size comes in more than one chunk, whole when joined", async () => {
    const text = "x".repeat(40) + "😀";
    const out = await chunks(text);
    expect(out.length).toBeGreaterThan(1);
    expect(out.join("")).toBe(text);
  });
});
