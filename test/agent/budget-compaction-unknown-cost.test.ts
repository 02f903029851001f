/**
 * A budget (`maxCostUsd`) and a compaction's summarizing request whose cost is unknown: the
 * model answered it (it streamed a summary) but the provider reported no usage, and the summary
 * failed (cut off at `length`, not a `stop`). docs/turn-control.md: a request that answered
 * without reporting its usage may have spent the whole budget, so no further request starts.
 * A failed summary once counted as a request that did not run, and the step's request started
 * anyway, past a budget that may have been spent.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import type { SessionEvent } from "../../src/protocol/index.js";
import type { ModelProvider, ModelRequest, ModelStreamPart } from "../../src/providers/types.js";
import { silentLogger } from "../../src/log.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
beforeEach(() => {
  ws = tempWorkspace("hb-budget-compact-");
});
afterEach(() => ws.cleanup());

/** Steps answer with usage; summaries stream text without usage, ended as `summaryFinish` says. */
function runtimeWith(summaryFinish: string, requests: string[], events: SessionEvent[]): AgentRuntime {
  const provider: ModelProvider = {
    name: "custom",
    async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart[]> {
      requests.push(request.purpose ?? "step");
      if (request.purpose === "compaction") {
        yield [{ type: "text-delta", text: "a summary the model was still writing" }, { type: "finish", finishReason: summaryFinish }];
        return;
      }
      yield [{ type: "text-delta", text: "answer" }, { type: "usage", usage: { inputTokens: 100, outputTokens: 10 } }, { type: "finish", finishReason: "stop" }];
    },
  };
  return new AgentRuntime({
    workspace: ws.dir,
    provider,
    model: "m",
    system: "You are a test.",
    maxSteps: 10,
    permissionMode: "read-only",
    tools: [],
    subagentDepth: 0,
    logger: silentLogger,
    prices: { inputPerMTok: 1, outputPerMTok: 1 },
    contextWindow: 1024,
    compactAt: 0.5,
    sink: {
      sessionEvent: async (_sessionId, event) => void events.push(structuredClone(event)),
      subagentStarted: async () => undefined,
      subagentFinished: async () => undefined,
    },
  });
}

const big = (t: string) => [{ type: "text" as const, text: `${t} ${"x".repeat(3000)}` }];

describe("a budget after a summarizing request of unknown cost", () => {
  it.each(["length", "stop-less end (no finish)"])("summary ended by %s, no usage reported: no step request starts, the turn ends budget", async (finish) => {
    const requests: string[] = [];
    const events: SessionEvent[] = [];
    const runtime = runtimeWith(finish === "length" ? "length" : "", requests, events);
    // Turn 1 (no budget) builds a history past compactAt; its own compaction attempts fail too.
    await runtime.prompt("s", big("one"));
    await runtime.prompt("s", big("two"));
    requests.length = 0;
    events.length = 0;
    const reason = await runtime.prompt("s", big("three"), { maxCostUsd: 1 });
    expect(requests).toEqual(["compaction"]);
    expect(reason).toMatchObject({ kind: "budget", limitUsd: 1 });
    expect(events.filter((e) => e.type === "step/start")).toEqual([]);
  });
});
