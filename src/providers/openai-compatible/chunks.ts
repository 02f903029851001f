/**
 * The response: one `chat.completion.chunk` mapped to stream parts (deltas, usage, finish
 * reasons).
 *
 * @module
 */
import type { Usage } from "../../protocol/index.js";
import { ModelError, type ModelStreamPart } from "../types.js";
import { isObject } from "../../json-value.js";
import { errorMessageOf, isContextWindowMessage } from "./errors.js";

/** Maps a chat completions `finish_reason` to ours; unknown values pass through unchanged. */
export function mapFinishReason(raw: string): string {
  switch (raw) {
    case "stop":
      return "stop";
    case "tool_calls":
      return "tool-calls";
    case "length":
      return "length";
    default:
      return raw;
  }
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** A token count as servers send it: a whole number from 0; anything else (negative, fractional, 1e308) is no count, so sums stay finite. */
function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * Maps a `usage` object: `prompt_tokens`, `completion_tokens`,
 * `completion_tokens_details.reasoning_tokens`, `prompt_cache_hit_tokens` (DeepSeek) or else
 * `prompt_tokens_details.cached_tokens` (OpenAI), and `prompt_cache_miss_tokens` (DeepSeek; not
 * derived where a server does not send it). Returns undefined when it carries no counts.
 */
export function mapUsage(raw: unknown): Usage | undefined {
  if (!isObject(raw)) return undefined;
  const input = count(raw.prompt_tokens);
  const output = count(raw.completion_tokens);
  if (input === undefined && output === undefined) return undefined;
  const usage: Usage = { inputTokens: input ?? 0, outputTokens: output ?? 0 };
  const reasoning = isObject(raw.completion_tokens_details) ? count(raw.completion_tokens_details.reasoning_tokens) : undefined;
  if (reasoning !== undefined) usage.reasoningTokens = reasoning;
  const cacheHit =
    count(raw.prompt_cache_hit_tokens) ??
    (isObject(raw.prompt_tokens_details) ? count(raw.prompt_tokens_details.cached_tokens) : undefined);
  if (cacheHit !== undefined) usage.cacheHitTokens = cacheHit;
  const cacheMiss = count(raw.prompt_cache_miss_tokens);
  if (cacheMiss !== undefined) usage.cacheMissTokens = cacheMiss;
  return usage;
}

/** The longest server label (`id`, `model`) kept; longer ones are cut. Real ones are under 100 characters. */
export const MAX_SERVER_LABEL = 256;

/**
 * A label the server sent (a completion's `id`, the `model` that answered), fit for a trace:
 * the server is untrusted, so only printable text is kept (no control, format or unpaired
 * surrogate characters, which could forge log lines or break exporters) and it is cut at
 * `MAX_SERVER_LABEL` code points (never inside a character). Undefined when nothing is left.
 */
export function serverLabel(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const printable = Array.from(value.replace(/[\p{C}]/gu, "").trim());
  return printable.length > 0 ? printable.slice(0, MAX_SERVER_LABEL).join("") : undefined;
}

/** What one parsed chunk contributes: parts to yield, the raw finish reason, and the response's `id` and `model` if it has them (cleaned). */
export interface ChunkResult {
  parts: ModelStreamPart[];
  finishReason?: string;
  id?: string;
  model?: string;
}

/**
 * Maps one `chat.completion.chunk` object. Only `choices[0]` is read. Within a delta, reasoning
 * (`reasoning_content`, else `reasoning`) comes before text, text before tool calls. Empty strings are skipped. Throws `ModelError` for an
 * `{"error": …}` object.
 */
export function mapChunk(chunk: unknown): ChunkResult {
  const parts: ModelStreamPart[] = [];
  if (!isObject(chunk)) return { parts };
  if (chunk.error !== undefined && chunk.error !== null) {
    const message = errorMessageOf(chunk) ?? "unknown error";
    throw new ModelError(
      `the model stream reported an error: ${message}`,
      undefined,
      isContextWindowMessage(message) ? "context-window" : "stream",
    );
  }
  let finishReason: string | undefined;
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
  if (isObject(choice)) {
    const delta = isObject(choice.delta) ? choice.delta : {};
    // DeepSeek streams reasoning as `reasoning_content`; OpenRouter, Groq, vLLM and Ollama as
    // `reasoning`. A delta carrying both means the same text twice: `reasoning_content` wins.
    const reasoning = nonEmptyString(delta.reasoning_content) ?? nonEmptyString(delta.reasoning);
    if (reasoning !== undefined) parts.push({ type: "reasoning-delta", text: reasoning });
    if (typeof delta.content === "string" && delta.content !== "") {
      parts.push({ type: "text-delta", text: delta.content });
    }
    if (Array.isArray(delta.tool_calls)) {
      delta.tool_calls.forEach((call: unknown, position: number) => {
        if (!isObject(call)) return;
        const fn = isObject(call.function) ? call.function : {};
        const part: Extract<ModelStreamPart, { type: "tool-call-delta" }> = {
          type: "tool-call-delta",
          index: typeof call.index === "number" ? call.index : position,
          argumentsDelta: typeof fn.arguments === "string" ? fn.arguments : "",
        };
        if (typeof call.id === "string" && call.id !== "") part.id = call.id;
        if (typeof fn.name === "string" && fn.name !== "") part.name = fn.name;
        parts.push(part);
      });
    }
    if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
      finishReason = choice.finish_reason;
    }
  }
  const usage = mapUsage(chunk.usage);
  if (usage) parts.push({ type: "usage", usage });
  const result: ChunkResult = { parts, finishReason };
  const id = serverLabel(chunk.id);
  if (id !== undefined) result.id = id;
  const model = serverLabel(chunk.model);
  if (model !== undefined) result.model = model;
  return result;
}
