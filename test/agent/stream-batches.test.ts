/**
 * A model stream hands its parts over in batches (providers/types.ts `ModelStreamBatch`); what a
 * turn does with them stays what it did part by part: a cancel stops the step before the next
 * part, not at the end of the batch, and nothing of a batch is told twice.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import type { SessionEvent } from "../../src/protocol/index.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import type { ModelProvider, ModelStreamBatch, ModelStreamPart } from "../../src/providers/types.js";
import { silentLogger } from "../../src/log.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;

beforeEach(() => {
  ws = tempWorkspace("hb-batches-");
});

afterEach(() => {
  ws.cleanup();
});

/** A runtime on `provider`; `onEvent` sees every event as it is emitted (synchronously). */
function runtimeOf(provider: ModelProvider, onEvent: (event: SessionEvent) => void): AgentRuntime {
  return new AgentRuntime({
    workspace: ws.dir,
    provider,
    model: "test",
    system: "You are a test.",
    maxSteps: 4,
    permissionMode: "workspace-write",
    tools: [],
    subagentDepth: 0,
    logger: silentLogger,
    sink: {
      sessionEvent: (_id, event) => {
        onEvent(structuredClone(event));
        return undefined;
      },
      subagentStarted: async () => undefined,
      subagentFinished: async () => undefined,
    },
  });
}

const text = (t: string) => [{ type: "text" as const, text: t }];
const chunkTexts = (events: SessionEvent[]) =>
  events.flatMap((e) => (e.type === "assistant/chunk" && e.data.chunk.type === "text-delta" ? [e.data.chunk.text] : []));

describe("model stream batches", () => {
  it("a cancel in the middle of a batch stops the step before the batch's next part", async () => {
    // Unpaced: the scripted provider hands its deltas over many to a batch.
    const script: Script = turns([{ text: "abcdefghijklmnopqrstuvwxyz".repeat(4), chunkSize: 1 }], [{ text: "next" }]);
    const events: SessionEvent[] = [];
    let cancelled: Promise<boolean> | undefined;
    const runtime: AgentRuntime = runtimeOf(new ScriptedProvider(script), (event) => {
      events.push(event);
      if (event.type === "assistant/chunk" && chunkTexts(events).length === 5) cancelled = runtime.cancel("s");
    });
    expect(await runtime.prompt("s", text("go"))).toEqual({ kind: "aborted" });
    expect(await cancelled).toBe(true);
    expect(chunkTexts(events)).toEqual(["a", "b", "c", "d", "e"]);
    const message = events.find((e) => e.type === "assistant/message");
    expect(message?.type === "assistant/message" && message.data.content).toEqual([{ type: "text", text: "abcde" }]);
  });

  it("tells each part of a batch once, in order, across batches of one, many and thousands of parts", async () => {
    const batches: ModelStreamPart[][] = [
      [{ type: "text-delta", text: "a" }],
      Array.from({ length: 5000 }, (_, i) => ({ type: "text-delta" as const, text: String(i % 10) })),
      [{ type: "reasoning-delta", text: "r" }, { type: "text-delta", text: "z" }],
      [{ type: "usage", usage: { inputTokens: 1, outputTokens: 2 } }, { type: "finish", finishReason: "stop" }],
    ];
    const provider: ModelProvider = {
      name: "batches",
      async *stream(): AsyncGenerator<ModelStreamBatch> {
        for (const batch of batches) yield batch;
      },
    };
    const events: SessionEvent[] = [];
    const runtime = runtimeOf(provider, (event) => events.push(event));
    expect(await runtime.prompt("s", text("go"))).toEqual({ kind: "completed" });
    const expected = batches.flat().flatMap((p) => (p.type === "text-delta" ? [p.text] : []));
    expect(chunkTexts(events)).toEqual(expected);
    const message = events.find((e) => e.type === "assistant/message");
    expect(message?.type === "assistant/message" && message.data.content).toEqual([
      { type: "text", text: expected.slice(0, 5001).join("") },
      { type: "reasoning", text: "r" },
      { type: "text", text: "z" },
    ]);
  });
});
