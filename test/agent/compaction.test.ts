/**
 * Compaction's pieces on a real Session (src/agent/compaction.ts): the window table, the prompt
 * estimate (which must follow the history down as well as up), and the cutting of old tool
 * outputs to stubs (memory only, newest three and short ones kept, never cut twice).
 */
import { describe, expect, it } from "vitest";
import { contextWindowOf, cutOldToolOutputs, estimatePrompt, KEEP_RECENT_TOOL_OUTPUTS, type CompactionContext } from "../../src/agent/compaction.js";
import { Session } from "../../src/agent/session.js";
import { historyTally } from "../../src/providers/history-tally.js";

const session = () => new Session("s", undefined, async () => undefined);
const ctx = (s: Session): CompactionContext =>
  ({ session: s, system: "sys", tools: [], window: 10_000, compactAt: 0.8, turn: 1, signal: new AbortController().signal }) as unknown as CompactionContext;

async function withReads(s: Session, outputs: string[]): Promise<void> {
  await s.emit("user/message", { id: "m1", content: [{ type: "text", text: "read them" }] });
  for (const [i, text] of outputs.entries()) {
    await s.emit("assistant/message", { id: `a${i}`, turn: 1, step: i + 1, content: [{ type: "tool-call", id: `c${i}`, name: "read_file", arguments: { path: `f${i}` } }] } as never);
    await s.emit("tool/result", { callId: `c${i}`, name: "read_file", content: [{ type: "text", text }], isError: false, durationMs: 1 });
  }
}

const toolTexts = (s: Session) => s.messages.filter((m) => m.role === "tool").map((m) => m.content.map((b) => b.text).join(""));

describe("the context window table", () => {
  it("gives DeepSeek's models 1M tokens, any other deepseek name too, and other routes 128 000", () => {
    for (const model of ["deepseek-flash", "deepseek-v4-pro", "deepseek-chat", "deepseek-reasoner", "deepseek-future"]) expect(contextWindowOf("deepseek", model)).toBe(1_048_576);
    expect(contextWindowOf("openai", "deepseek-flash")).toBe(128_000);
    expect(contextWindowOf("scripted", "demo")).toBe(128_000);
  });
});

describe("estimatePrompt", () => {
  it("is a quarter of the characters of system, tools and history before any usage was reported", async () => {
    const s = session();
    await withReads(s, ["x".repeat(4_000)]);
    const c = ctx(s);
    expect(estimatePrompt(c)).toBe(Math.ceil((3 + 2 + s.historyChars) / 4));
  });

  it("goes on from the last reported usage, up with what the history gained and down with what it lost", async () => {
    const s = session();
    await withReads(s, ["a".repeat(2_000), "b".repeat(2_000), "c".repeat(2_000), "d".repeat(2_000), "e".repeat(2_000)]);
    s.lastPrompt = { inputTokens: 5_000, historyChars: s.historyChars };
    expect(estimatePrompt(ctx(s))).toBe(5_000);
    await s.emit("user/message", { id: "m2", content: [{ type: "text", text: "y".repeat(400) }] });
    expect(estimatePrompt(ctx(s))).toBe(5_100);
    const before = s.historyChars;
    cutOldToolOutputs(s);
    // Two outputs of 2 000 characters became stubs: the estimate falls by their quarter, less the stubs'.
    expect(estimatePrompt(ctx(s))).toBe(5_100 + Math.ceil((s.historyChars - before) / 4));
    expect(estimatePrompt(ctx(s))).toBeLessThan(4_300);
  });
});

describe("cutOldToolOutputs", () => {
  it("cuts every output but the newest three to a stub naming the tool and the size, and only once", async () => {
    const s = session();
    const outputs = ["a", "b", "c", "d", "e"].map((ch) => ch.repeat(1_000));
    await withReads(s, [...outputs, "short"]);
    expect(cutOldToolOutputs(s)).toBe(3);
    const texts = toolTexts(s);
    // The newest three (one of them short) stay whole.
    expect(texts.slice(-KEEP_RECENT_TOOL_OUTPUTS)).toEqual([outputs[3], outputs[4], "short"]);
    for (const [i, text] of texts.slice(0, 3).entries()) {
      expect(text).toMatch(/^\[cut by compaction: this read_file output had 1000 characters; it began "/);
      expect(text).toContain(outputs[i].slice(0, 100));
      expect(text.length).toBeLessThan(400);
    }
    expect(s.historyChars).toBe(s.messages.reduce((n, m) => n + m.content.reduce((k, b) => k + (b.type === "tool-call" ? JSON.stringify(b.arguments).length : b.text.length), 0), 0));
    expect(cutOldToolOutputs(s)).toBe(0);
  });

  it("leaves outputs of 400 characters or fewer as they are", async () => {
    const s = session();
    await withReads(s, ["x".repeat(400), "y".repeat(399), "a", "b", "c"]);
    expect(cutOldToolOutputs(s)).toBe(0);
  });

  it("makes the scripted provider's tally count the cut history anew (its default usage follows the cut)", async () => {
    const s = session();
    await withReads(s, ["a".repeat(5_000), "b".repeat(5_000), "c", "d", "e"]);
    const before = historyTally(s.messages).chars;
    cutOldToolOutputs(s);
    const after = historyTally(s.messages).chars;
    expect(after).toBeLessThan(before - 9_000);
    expect(after).toBe(s.historyChars);
  });
});
