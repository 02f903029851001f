/**
 * OpenAI-compatible chat completions, streamed: the shared implementation of the `deepseek` and
 * `openai` providers.
 *
 * This module builds the request body from a {@link ModelRequest}, sends it with undici's `fetch`
 * (through `EnvHttpProxyAgent` when a proxy is configured), parses the SSE stream with
 * eventsource-parser, and maps each chunk to {@link ModelStreamPart}s. Failures become
 * {@link ModelError}s; faults that happen before any part was yielded are retried.
 *
 * undici and eventsource-parser are loaded lazily, on the first request, so that importing this
 * module costs nothing at start-up. Only types are imported statically.
 *
 * @module
 */
import type { Dispatcher } from "undici";
import type { EventSourceMessage } from "eventsource-parser";
import type { Usage } from "../../protocol/index.js";
import {
  ModelError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
} from "../types.js";
import type { OpenAICompatibleSettings } from "./settings.js";

// ---------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------

/** A message of the chat completions API, as sent. */
export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | {
      role: "assistant";
      content: string | null;
      reasoning_content?: string;
      tool_calls?: WireToolCall[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** The body of `POST /chat/completions`, as sent. */
export interface ChatCompletionBody {
  model: string;
  messages: WireMessage[];
  stream: true;
  stream_options: { include_usage: true };
  max_tokens?: number;
  tools?: Array<{ type: "function"; function: { name: string; description: string; parameters: unknown } }>;
}

/**
 * Maps the conversation to chat completions messages.
 *
 * - user and tool text blocks are joined with "\n" (they are separate pieces of input);
 *   assistant text and reasoning blocks are concatenated as streamed ("").
 * - an assistant message with tool calls and no text has `content: null`; one with neither
 *   (a step cancelled before any output) has `content: ""`, so that no message is empty.
 * - tool-call arguments are sent as the model wrote them (`rawArguments`) when that is a
 *   non-empty string, else as the JSON of the parsed arguments.
 * - `reasoning_content` goes back only when `sendReasoningContent` and the message has tool calls
 *   (DeepSeek's thinking mode requires it there; other servers may reject the field).
 */
export function toWireMessages(
  system: string,
  messages: readonly ModelMessage[],
  sendReasoningContent: boolean,
): WireMessage[] {
  const wire: WireMessage[] = [];
  if (system) wire.push({ role: "system", content: system });
  for (const message of messages) {
    switch (message.role) {
      case "user":
        wire.push({ role: "user", content: message.content.map((b) => b.text).join("\n") });
        break;
      case "tool":
        wire.push({
          role: "tool",
          tool_call_id: message.callId,
          content: message.content.map((b) => b.text).join("\n"),
        });
        break;
      case "assistant": {
        let text = "";
        let reasoning = "";
        const toolCalls: WireToolCall[] = [];
        for (const block of message.content) {
          if (block.type === "text") text += block.text;
          else if (block.type === "reasoning") reasoning += block.text;
          else if (block.type === "tool-call") {
            toolCalls.push({
              id: block.id,
              type: "function",
              function: {
                name: block.name,
                arguments: block.rawArguments ? block.rawArguments : JSON.stringify(block.arguments ?? {}),
              },
            });
          }
        }
        if (toolCalls.length === 0) {
          wire.push({ role: "assistant", content: text });
        } else {
          const out: WireMessage = { role: "assistant", content: text || null, tool_calls: toolCalls };
          if (sendReasoningContent && reasoning) out.reasoning_content = reasoning;
          wire.push(out);
        }
        break;
      }
    }
  }
  return wire;
}

/** Builds the request body of one streamed chat completion. */
export function buildRequestBody(request: ModelRequest, sendReasoningContent: boolean): ChatCompletionBody {
  const body: ChatCompletionBody = {
    model: request.model,
    messages: toWireMessages(request.system, request.messages, sendReasoningContent),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  return body;
}

// ---------------------------------------------------------------------------
// Response parsing
// ---------------------------------------------------------------------------

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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/**
 * Maps a `usage` object: `prompt_tokens`, `completion_tokens`,
 * `completion_tokens_details.reasoning_tokens`, and `prompt_cache_hit_tokens` (DeepSeek) or else
 * `prompt_tokens_details.cached_tokens` (OpenAI). Returns undefined when it carries no counts.
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
  return usage;
}

/** What one parsed chunk contributes: parts to yield, and the raw finish reason if it has one. */
export interface ChunkResult {
  parts: ModelStreamPart[];
  finishReason?: string;
}

/**
 * Maps one `chat.completion.chunk` object. Only `choices[0]` is read. Within a delta, reasoning
 * comes before text, text before tool calls. Empty strings are skipped. Throws `ModelError` for an
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
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      parts.push({ type: "reasoning-delta", text: delta.reasoning_content });
    }
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
  return { parts, finishReason };
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

const CONTEXT_WINDOW_PATTERN = /context[ _-]?length|maximum context|context[ _-]?window|too many tokens|context_length_exceeded/i;

/** True when an error message says the request does not fit the model's context window. */
export function isContextWindowMessage(text: string): boolean {
  return CONTEXT_WINDOW_PATTERN.test(text);
}

/** The `message` of `{"error": {"message": …}}`, `{"error": "…"}` or `{"message": …}`. */
function errorMessageOf(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  const error = body.error;
  if (typeof error === "string") return error;
  if (isObject(error) && typeof error.message === "string") return error.message;
  if (typeof body.message === "string") return body.message;
  return undefined;
}

/** The server's error message from a response body (JSON or text), shortened. */
export function serverErrorMessage(bodyText: string): string {
  let message: string | undefined;
  try {
    message = errorMessageOf(JSON.parse(bodyText));
  } catch {
    /* not JSON: use the text */
  }
  message = (message ?? bodyText).trim();
  if (message.length > 1000) message = `${message.slice(0, 1000)}…`;
  return message;
}

/**
 * Parses `Retry-After`: delay-seconds (fractions allowed) or an HTTP date. Returns milliseconds
 * (>= 0), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, base·2^retry). */
export function backoffDelay(retry: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** retry);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** A failure of one attempt, and whether another attempt may fix it (when nothing was yielded). */
class AttemptFailure extends Error {
  constructor(
    readonly error: ModelError,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

function httpFailure(name: string, status: number, bodyText: string, retryAfter: string | null, hasKey: boolean): AttemptFailure {
  const serverMessage = serverErrorMessage(bodyText) || "(empty response body)";
  if (status === 401 || status === 403) {
    const what = hasKey ? `the ${name} API key was refused` : `the ${name} server refused the request made without an API key`;
    return new AttemptFailure(new ModelError(`${what} (HTTP ${status}): ${serverMessage}`, status, "auth"), false);
  }
  if ((status === 400 || status === 413 || status === 422) && isContextWindowMessage(serverMessage)) {
    return new AttemptFailure(
      new ModelError(`the request does not fit the model's context window (HTTP ${status}): ${serverMessage}`, status, "context-window"),
      false,
    );
  }
  const retryable = status === 408 || status === 429 || status >= 500;
  const code = status === 429 ? "rate-limit" : "http";
  return new AttemptFailure(
    new ModelError(`${name} answered HTTP ${status}: ${serverMessage}`, status, code),
    retryable,
    retryable ? parseRetryAfter(retryAfter) : undefined,
  );
}

/** Describes a fetch/stream failure from undici: `TypeError('fetch failed', {cause})` and friends. */
function describeNetworkError(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    const text = code && !current.message.includes(code) ? `${current.message} (${code})` : current.message;
    if (text && !parts.includes(text)) parts.push(text);
    current = (current as Error & { cause?: unknown }).cause;
  }
  return parts.join(": ") || String(err);
}

function networkCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string") return code;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Transport
// ---------------------------------------------------------------------------

const importUndici = () => import("undici");
const importParser = () => import("eventsource-parser");
type Undici = Awaited<ReturnType<typeof importUndici>>;
type ParserModule = Awaited<ReturnType<typeof importParser>>;

let undiciModule: Promise<Undici> | undefined;
let parserModule: Promise<ParserModule> | undefined;

function loadUndici(): Promise<Undici> {
  return (undiciModule ??= importUndici());
}

function loadParser(): Promise<ParserModule> {
  return (parserModule ??= importParser());
}

/** Builds the dispatcher: `EnvHttpProxyAgent` when a proxy is configured, a plain `Agent` otherwise. */
async function createDispatcher(settings: OpenAICompatibleSettings): Promise<Dispatcher> {
  const undici = await loadUndici();
  const agentOptions = {
    connect: { timeout: settings.connectTimeoutMs || undefined },
    // Our own idle timer (below) is the real guard; these are a backstop a little above it.
    headersTimeout: settings.idleTimeoutMs ? settings.idleTimeoutMs + 5_000 : 0,
    bodyTimeout: settings.idleTimeoutMs ? settings.idleTimeoutMs + 5_000 : 0,
  };
  const { httpProxy, httpsProxy, noProxy } = settings.proxy;
  if (httpProxy || httpsProxy) {
    // Values are always passed (possibly ""), so undici never falls back to process.env.
    return new undici.EnvHttpProxyAgent({ ...agentOptions, httpProxy, httpsProxy, noProxy });
  }
  return new undici.Agent(agentOptions);
}

/** Resolves after `ms`, or rejects with the abort reason as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Marker reason of the internal abort fired by the idle timer. */
class IdleTimeout extends Error {
  constructor(readonly ms: number, readonly phase: string) {
    super(`no data from the model for ${ms} ms (${phase})`);
  }
}

const MAX_SSE_BUFFER_CHARS = 16 * 1024 * 1024;

/** A provider speaking OpenAI-compatible streamed chat completions. */
class OpenAICompatibleProvider implements ModelProvider {
  readonly name: string;
  private dispatcher: Promise<Dispatcher> | undefined;

  constructor(private readonly settings: OpenAICompatibleSettings) {
    this.name = settings.name;
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelStreamPart> {
    signal.throwIfAborted();
    const body = JSON.stringify(buildRequestBody(request, this.settings.sendReasoningContent));
    const { maxRetries, retryBaseMs, retryMaxMs, retryAfterMaxMs, log } = this.settings;
    for (let retry = 0; ; retry++) {
      let yielded = false;
      try {
        for await (const part of this.attempt(body, signal)) {
          yielded = true;
          yield part;
        }
        return;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (!(err instanceof AttemptFailure)) throw err;
        if (yielded || !err.retryable) throw err.error;
        if (retry >= maxRetries) {
          throw new ModelError(
            maxRetries > 0 ? `${err.error.message} (gave up after ${maxRetries} ${maxRetries === 1 ? "retry" : "retries"})` : err.error.message,
            err.error.httpStatus,
            err.error.code,
          );
        }
        const delay =
          err.retryAfterMs !== undefined ? Math.min(err.retryAfterMs, retryAfterMaxMs) : backoffDelay(retry, retryBaseMs, retryMaxMs);
        log("warn", `${err.error.message}; retry ${retry + 1} of ${maxRetries} in ${delay} ms`);
        await sleep(delay, signal);
      }
    }
  }

  /**
   * One HTTP attempt. Throws `AttemptFailure` for every failure it can classify; when `signal`
   * aborts, the request is aborted at once and whatever undici throws propagates.
   */
  private async *attempt(body: string, signal: AbortSignal): AsyncGenerator<ModelStreamPart> {
    const { settings } = this;
    const [undici, { createParser }] = await Promise.all([loadUndici(), loadParser()]);
    this.dispatcher ??= createDispatcher(settings);
    const dispatcher = await this.dispatcher;

    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    // The signal may have aborted while the modules or the dispatcher were loading.
    if (signal.aborted) controller.abort(signal.reason);
    let idle: NodeJS.Timeout | undefined;
    const armIdle = (phase: string) => {
      clearTimeout(idle);
      if (settings.idleTimeoutMs > 0) {
        idle = setTimeout(() => controller.abort(new IdleTimeout(settings.idleTimeoutMs, phase)), settings.idleTimeoutMs);
      }
    };
    /** Maps an error thrown by fetch or by the body stream. */
    const failure = (err: unknown, phase: string): unknown => {
      if (signal.aborted) return signal.reason;
      if (err instanceof AttemptFailure) return err;
      const reason = controller.signal.reason;
      if (controller.signal.aborted && reason instanceof IdleTimeout) {
        return new AttemptFailure(new ModelError(reason.message, undefined, "timeout"), true);
      }
      const code = networkCode(err);
      const timeout = code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT";
      return new AttemptFailure(
        new ModelError(`${phase} ${settings.endpoint} failed: ${describeNetworkError(err)}`, undefined, timeout ? "timeout" : "network"),
        true,
      );
    };

    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let finishedCleanly = false;
    try {
      const headers: Record<string, string> = {
        "content-type": "application/json",
        accept: "text/event-stream",
        "user-agent": "harness-bridge",
      };
      if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;

      armIdle("waiting for the response headers");
      let response: Awaited<ReturnType<Undici["fetch"]>>;
      try {
        response = await undici.fetch(settings.endpoint, {
          method: "POST",
          headers,
          body,
          signal: controller.signal,
          dispatcher,
        });
      } catch (err) {
        throw failure(err, "the request to");
      }

      if (!response.ok) {
        let text = "";
        try {
          armIdle("reading the error response");
          text = await response.text();
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          /* keep the status even when the body is lost */
        }
        throw httpFailure(settings.name, response.status, text, response.headers.get("retry-after"), !!settings.apiKey);
      }
      if (!response.body) {
        throw new AttemptFailure(new ModelError(`${settings.name} answered HTTP ${response.status} without a body`, response.status, "stream"), true);
      }
      const contentType = response.headers.get("content-type") ?? "";
      if (contentType.includes("application/json")) {
        // The server ignored `stream: true` or answered an error with status 200.
        armIdle("reading a JSON response");
        const text = await response.text().catch((err: unknown) => {
          throw failure(err, "reading the response of");
        });
        const message = serverErrorMessage(text);
        throw new AttemptFailure(
          new ModelError(
            `${settings.name} answered JSON instead of an event stream: ${message}`,
            response.status,
            isContextWindowMessage(message) ? "context-window" : "stream",
          ),
          false,
        );
      }

      const events: EventSourceMessage[] = [];
      let parseError: Error | undefined;
      const parser = createParser({
        onEvent: (event) => events.push(event),
        onError: (err) => {
          if (err.type === "max-buffer-size-exceeded") parseError = err;
          else settings.log("debug", `ignored a malformed SSE line: ${err.message}`);
        },
        maxBufferSize: MAX_SSE_BUFFER_CHARS,
      });
      const decoder = new TextDecoder("utf-8");
      reader = response.body.getReader();
      let finishReason: string | undefined;
      let sawDone = false;

      reading: for (;;) {
        armIdle("waiting for the event stream");
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (finishReason !== undefined && !signal.aborted) {
            // Everything the answer needs has arrived; see "end of stream" below.
            settings.log("debug", `the stream broke after finish_reason, accepted: ${describeNetworkError(err)}`);
            break;
          }
          throw failure(err, "reading the event stream of");
        }
        if (chunk.done) {
          parser.feed(decoder.decode());
          parser.reset({ consume: true });
        } else {
          parser.feed(decoder.decode(chunk.value, { stream: true }));
        }
        if (parseError) {
          throw new AttemptFailure(new ModelError(`the event stream is malformed: ${parseError.message}`, undefined, "stream"), false);
        }
        while (events.length > 0) {
          const event = events.shift()!;
          const data = event.data.trim();
          if (data === "[DONE]") {
            sawDone = true;
            break reading;
          }
          if (data === "") continue;
          let parsed: unknown;
          try {
            parsed = JSON.parse(data);
          } catch {
            settings.log("debug", `ignored a non-JSON data line: ${JSON.stringify(data.slice(0, 200))}`);
            continue;
          }
          let result: ChunkResult;
          try {
            result = mapChunk(parsed);
          } catch (err) {
            if (err instanceof ModelError) throw new AttemptFailure(err, false);
            throw err;
          }
          for (const part of result.parts) yield part;
          if (result.finishReason !== undefined) finishReason = result.finishReason;
        }
        if (chunk.done) break;
      }

      // End of stream. A finish_reason is required. `[DONE]` is not, once a finish_reason has
      // arrived: the answer is complete, and a server (or proxy) that closes without `[DONE]`
      // loses nothing but possibly a trailing usage chunk. `[DONE]` or EOF without any
      // finish_reason is a truncated answer: a model error (retried when nothing was yielded).
      if (finishReason === undefined) {
        throw new AttemptFailure(new ModelError("the model stream ended before it finished", undefined, "stream"), true);
      }
      if (!sawDone) settings.log("debug", "the stream ended without [DONE] after a finish_reason; accepted");
      finishedCleanly = true;
      yield { type: "finish", finishReason: mapFinishReason(finishReason) };
    } finally {
      clearTimeout(idle);
      signal.removeEventListener("abort", onAbort);
      if (!finishedCleanly) controller.abort(new Error("stream released"));
      // Release the body (a no-op when it was read to its end).
      reader?.cancel().catch(() => {});
    }
  }
}

/** Creates a provider from resolved settings. */
export function createOpenAICompatibleProvider(settings: OpenAICompatibleSettings): ModelProvider {
  return new OpenAICompatibleProvider(settings);
}
