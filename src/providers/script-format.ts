/**
 * The scripted model's script format (documented in README.md, "The scripted provider"): its
 * own file so the built-in demo script (demo-script.ts) and the provider that replays it
 * (scripted.ts) both depend on it and not on each other.
 */
import type { JsonObject, Usage } from "../protocol/index.js";

/** One scripted model response. */
export interface ScriptStep {
  reasoning?: string;
  text?: string;
  toolCalls?: Array<{ id?: string; name: string; arguments?: JsonObject; rawArguments?: string }>;
  /** Default: `tool-calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Characters per streamed delta. Default 16. */
  chunkSize?: number;
  /** Stream `text` this many times. Default 1. */
  repeat?: number;
  /** Wait this long before each chunk. */
  delayMs?: number;
  /** After streaming, wait until the request is aborted. */
  hang?: boolean;
  /** After streaming, fail with this model error. */
  error?: { message: string; httpStatus?: number; code?: string };
  /** Default: a quarter of the characters of the messages in and of the output. */
  usage?: Usage;
}

export interface ScriptTurn {
  steps: ScriptStep[];
}

/**
 * A whole script: turns for top-level sessions, optionally others for subagent sessions, and
 * the answers to compaction's summarizing requests (the n-th summarizing request of a session,
 * counted in the bridge process, takes `compaction.steps[n % length]`; without them a
 * compaction fails as a model error).
 */
export interface Script {
  turns: ScriptTurn[];
  subagent?: { turns: ScriptTurn[] };
  compaction?: { steps: ScriptStep[] };
}
