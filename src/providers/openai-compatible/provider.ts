/**
 * The provider: one streamed chat completion per attempt. It sends the body with undici's
 * `fetch` (through `EnvHttpProxyAgent` when a proxy is configured), checks the response, parses
 * the SSE stream with eventsource-parser and yields each chunk's parts; every failure it can
 * classify becomes an `AttemptFailure`, which `withRetries` retries or reports.
 *
 * undici and eventsource-parser are loaded lazily, on the first request, so that importing this
 * module costs nothing at start-up. Only types are imported statically.
 *
 * @module
 */
import type { Dispatcher } from "undici";
import type { EventSourceMessage } from "eventsource-parser";
import { ModelError, type ModelProvider, type ModelRequest, type ModelStreamPart } from "../types.js";
import { mapChunk, mapFinishReason, type ChunkResult } from "./chunks.js";
import { describeNetworkError, httpFailure, isContextWindowMessage, networkCode, serverErrorMessage } from "./errors.js";
import { AttemptFailure, withRetries } from "./retry.js";
import type { OpenAICompatibleSettings } from "./settings.js";
import { buildRequestBody } from "./wire-messages.js";

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
    yield* withRetries(() => this.attempt(body, signal), this.settings, signal);
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
