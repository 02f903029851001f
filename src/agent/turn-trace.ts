/**
 * What the agent loop tells a tracer (src/tracing/, loaded only when the OTEL variables ask for
 * it): where a turn, a model request and a tool call begin and end. Types only: nothing here
 * runs, so a bridge without tracing loads no tracing code (server/tracing-loader.ts), and the
 * loop's hooks are one optional call per boundary (`config.trace?.…`).
 *
 * @module
 */
import type { AssistantContentBlock, TextBlock, ToolCallBlock, TurnEndReason, Usage } from "../protocol/index.js";
import type { ModelProvider, ResponseMetadata } from "../providers/types.js";
import type { ToolOutput } from "../tools/types.js";

/** Starts the spans of turns; one per runtime. */
export interface Tracer {
  /**
   * A turn's span (`invoke_agent`): the child of `traceparent` when it is given, else of the
   * tool call that runs this turn (a subagent's, inside `TurnTrace.tool`), else a new trace.
   */
  turn(info: TurnInfo): TurnTrace;
  /** Exports what is queued and stops; resolves within the tracer's own bound, never rejects. */
  shutdown(): Promise<void>;
}

export interface TurnInfo {
  sessionId: string;
  parentSessionId?: string;
  turn: number;
  model: string;
  provider: string;
  /** `session/prompt.traceparent` (W3C Trace Context), already checked by the schema. */
  traceparent?: string;
  /** The user's message (recorded only when message content is captured). */
  input: TextBlock[];
}

export interface TurnTrace {
  /** A model request's span (`chat {model}`), started now. */
  chat(step: number): ChatSpan;
  /** Runs a tool call inside its span (`execute_tool {name}`): a subagent it starts nests under it. */
  tool<T extends { output: ToolOutput }>(call: ToolCallBlock, run: () => Promise<T>): Promise<T>;
  /**
   * `provider` with each request in a chat span marked `harness.compaction`: what compaction's
   * summarizing requests go through. `priced` is the loop's own pricing (cost.ts `withCost` with
   * the turn's prices), so the span's cost is the one the turn's usage counts.
   */
  summarizing(provider: ModelProvider, priced: (usage: Usage | undefined) => Usage | undefined): ModelProvider;
  /** The turn ended (any way): its span ends and is queued for export. */
  end(reason: TurnEndReason): void;
}

export interface ChatSpan {
  end(result: ChatResult): void;
}

export interface ChatResult {
  /** The finish reason recorded on the step's message ("stop", "tool-calls", "length", "error", "aborted", …). */
  finishReason: string;
  usage?: Usage;
  /** The server's `response-metadata` (its completion id, the model that answered); absent fields are not recorded. */
  response?: ResponseMetadata;
  /** What the model said; called only when message content is captured. */
  content?: () => AssistantContentBlock[];
  /** Set when the step failed: the turn's end reason. */
  failure?: TurnEndReason;
}
