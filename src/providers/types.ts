/**
 * The interface between the agent loop and a model provider.
 *
 * A provider turns one model request into a stream of parts. The agent loop assembles the parts
 * into an assistant message, so every provider shares one assembly of text, reasoning and
 * tool-call deltas; a provider only maps its own wire format to these parts.
 */
import type { JsonObject, TextBlock, AssistantContentBlock, Usage, ThinkingMode, ToolChoice } from "../protocol/index.js";
import type { Logger } from "../log.js";

/** A message of the conversation as the agent keeps it, independent of any provider's format. */
export type ModelMessage =
  /** `synthetic`: written by the bridge within a turn (a structured turn's reminder, a compaction summary, a stop hook's `continue`), not a user message: it starts no turn. */
  | { role: "user"; content: TextBlock[]; synthetic?: "reminder" | "summary" | "hook" }
  | { role: "assistant"; content: AssistantContentBlock[] }
  | { role: "tool"; callId: string; name: string; content: TextBlock[]; isError: boolean };

/** A tool as offered to the model. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: JsonObject;
}

/** One model request: one step of a turn. */
export interface ModelRequest {
  model: string;
  system: string;
  messages: ModelMessage[];
  tools: ToolSpec[];
  maxTokens?: number;
  /** Who is asking; the scripted provider picks its subagent script when `parentSessionId` is set. */
  sessionId: string;
  parentSessionId?: string;
  /** The turn (1-based, across restarts) and step of this request; the scripted provider picks its step by them. */
  turn?: number;
  step?: number;
  /**
   * `compaction`: the dedicated request that summarizes older history (agent/compaction.ts);
   * HTTP providers send it with `tool_choice: "none"`, the scripted provider answers it from
   * the script's `compaction` steps.
   */
  purpose?: "compaction";
}

/** A part of a streamed model response. */
export type ModelStreamPart =
  | { type: "text-delta"; text: string }
  | { type: "reasoning-delta"; text: string }
  /** Keyed by `index`; `id` and `name` may arrive on any delta; argument fragments concatenate. */
  | { type: "tool-call-delta"; index: number; id?: string; name?: string; argumentsDelta: string }
  /** The last usage part wins. */
  | { type: "usage"; usage: Usage }
  /**
   * What the server says answered: its completion `id` and the `model` that served it (a
   * gateway may route to another model than the one asked for). Either may be absent; for
   * each field the last part that has it wins. The values come from the server, so they are
   * untrusted: a provider passes them only cleaned (`serverLabel` in openai-compatible/chunks.ts).
   * Not a delta: never sent to the client; only traces record it.
   */
  | { type: "response-metadata"; id?: string; model?: string }
  /** `stop`, `tool-calls`, `length`, or another provider value (which ends the turn as a model error). */
  | { type: "finish"; finishReason: string };

/**
 * The parts a model stream had ready at once, in order, never empty: an unpaced scripted step's
 * deltas (a bounded run of them), the parts of one server event.
 * Why batches, not one part per item: each item of an async iterable costs its consumer a
 * promise, its reactions and an iterator result, per layer it passes through; a streamed turn
 * has one part per chunk, and that machinery was a large share of the bridge's CPU for one
 * (bench/README.md, "Issue 34, round 7").
 */
export type ModelStreamBatch = readonly ModelStreamPart[];

/** What a stream's `response-metadata` parts say: the server's completion id and the model that answered. */
export type ResponseMetadata = { id?: string; model?: string };

/** Merges a `response-metadata` part into `into`: per field, the last part that has it wins (a retried request's answer replaces the failed attempt's). */
export function mergeResponse(into: ResponseMetadata, part: ResponseMetadata): void {
  if (part.id !== undefined) into.id = part.id;
  if (part.model !== undefined) into.model = part.model;
}

/**
 * A model failure. Thrown from `stream()`; ends the turn with `{kind: "model-error", ...}`.
 * `code` is machine-readable, e.g. `context-window`, `auth`, `http`, `stream`.
 */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly httpStatus?: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = "ModelError";
  }
}

/** A provider configured for one bridge process (one `initialize`). */
export interface ModelProvider {
  /** The registered name, e.g. `deepseek`. */
  readonly name: string;
  /**
   * Streams one model response. Must stop promptly and release its resources (HTTP stream,
   * timers) when `signal` aborts; may then throw any error (the loop knows it was aborted).
   * A stream that ends without a `finish` part is treated as a model error.
   */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamBatch>;
}

export type { ThinkingMode, ToolChoice };

/** What a provider factory receives from `initialize`. */
export interface ProviderConfig {
  model: string;
  /** The absolute workspace path; the scripted provider resolves relative script paths against it. */
  cwd: string;
  /** The bridge's environment (API keys, base URLs, proxy settings). */
  env: NodeJS.ProcessEnv;
  /** The bridge's logger (stderr, at `--log-level`). Absent: the provider writes warnings to stderr. */
  logger?: Logger;
  /**
   * HTTP providers: the longest wait, per attempt, for the model's first output; keep-alive
   * comments do not count. Default 600000 ms (DeepSeek's own limit for a queued request), or
   * `HARNESS_FIRST_TOKEN_TIMEOUT_MS`; 0 disables it.
   */
  firstTokenTimeoutMs?: number;
  /** HTTP providers: the longest a whole model request may take, retries included. Default 3600000 ms, or `HARNESS_REQUEST_TIMEOUT_MS`; 0 disables it. */
  requestTimeoutMs?: number;
  /**
   * HTTP providers: sent as `tool_choice` with a request that offers tools; `required` and a
   * named tool only with the first request of a turn. Absent: not sent (the server's default, `auto`).
   */
  toolChoice?: ToolChoice;
  /** HTTP providers: thinking mode on or off; absent: the server's default. */
  thinking?: ThinkingMode;
  /** HTTP providers: the reasoning effort (the route may restrict the values). */
  reasoningEffort?: string;
  /** HTTP providers: the end user's id, in the field the route names (`user_id`, `user`). */
  user?: string;
}

/** Registers a provider under a name. */
export interface ProviderFactory {
  readonly name: string;
  /**
   * Builds the provider, or throws `ProviderUnavailableError` when it cannot work as configured
   * (for `deepseek`: no `DEEPSEEK_API_KEY`), so `initialize` fails with -32004 and not the first prompt.
   * May be async so that heavy modules (HTTP client, SSE parser) load only when the provider is used.
   */
  create(config: ProviderConfig): ModelProvider | Promise<ModelProvider>;
}

/**
 * The environment variables holding provider keys: dropped from the bridge's own environment at
 * start-up, never passed to tools, and the only names `--secrets-fd` accepts.
 */
export const PROVIDER_KEY_VARIABLES: readonly string[] = ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"];

/** Thrown by a factory when the provider cannot work as configured; the message names what to set. */
export class ProviderUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProviderUnavailableError";
  }
}

/**
 * Thrown by a factory when a setting `initialize` gave is one this provider cannot take (e.g.
 * a reasoning effort DeepSeek does not know); `initialize` answers -32602 with the message.
 */
export class ProviderSettingError extends Error {
  constructor(
    /** The `initialize` field, e.g. `reasoningEffort`. */
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "ProviderSettingError";
  }
}
