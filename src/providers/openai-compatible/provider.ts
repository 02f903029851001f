/**
 * The provider: one streamed chat completion per attempt. It sends the body with undici's
 * `fetch` (through `EnvHttpProxyAgent` when a proxy is configured), checks the response, parses
 * the SSE stream with eventsource-parser and yields each chunk's parts; every failure it can
 * classify becomes an `AttemptFailure`, which `withRetries` retries or reports.
 *
 * undici and eventsource-parser (http-client.ts, a chunk of its own in the single executable) are
 * loaded lazily, on the first request, so that importing this module costs nothing at start-up.
 * Only types are imported from them statically.
 *
 * @module
 */
import type { Dispatcher } from "undici";
import { guardHttpSockets } from "../../http-socket-guard.js";
import { evaluateChunk } from "../../server/chunk.js";
import { ModelError, type ModelProvider, type ModelRequest, type ModelStreamBatch, type ModelStreamPart, type ResponseMetadata } from "../types.js";
import { mapChunk, mapFinishReason, type ChunkResult } from "./chunks.js";
import { describeNetworkError, httpFailure, isContextWindowMessage, serverErrorMessage } from "./errors.js";
import { withHint } from "./hints.js";
import { readEventData } from "./event-stream.js";
import { AttemptFailure, withRetries } from "./retry.js";
import type { OpenAICompatibleSettings } from "./settings.js";
import { AttemptWatchdog, RequestDeadline } from "./watchdog.js";
import { buildRequestBody } from "./wire-messages.js";

type HttpClient = typeof import("./http-client.js");

/** Set by scripts/build.mjs to the HTTP client's chunk (undici, the SSE parser); undefined when run from source. */
declare const __HTTP_CHUNK__: string | undefined;

let httpClient: Promise<HttpClient> | undefined;

function loadHttpClient(): Promise<HttpClient> {
  httpClient ??= typeof __HTTP_CHUNK__ === "string" ? Promise.resolve().then(() => evaluateChunk<HttpClient>(__HTTP_CHUNK__ as string)) : import("./http-client.js");
  return httpClient;
}

/** Builds the dispatcher: `EnvHttpProxyAgent` when a proxy is configured, a plain `Agent` otherwise. */
async function createDispatcher(settings: OpenAICompatibleSettings): Promise<Dispatcher> {
  const http = await loadHttpClient();
  // The last resort behind undici itself: an exception in a socket's handler fails that
  // socket's request, never the process (http-socket-guard.ts).
  guardHttpSockets((error, event) => settings.log("warn", `an HTTP connection failed in its '${event}' handler and was closed, failing its request: ${error.stack ?? error.message}`));
  const agentOptions = {
    connect: { timeout: settings.connectTimeoutMs || undefined },
    // Our own idle timer (watchdog.ts) is the real guard; these are a backstop a little above it.
    headersTimeout: settings.idleTimeoutMs ? settings.idleTimeoutMs + 5_000 : 0,
    bodyTimeout: settings.idleTimeoutMs ? settings.idleTimeoutMs + 5_000 : 0,
  };
  const { httpProxy, httpsProxy, noProxy } = settings.proxy;
  if (httpProxy || httpsProxy) {
    // Values are always passed (possibly ""), so undici never falls back to process.env.
    // proxyTunnel: CONNECT for http:// endpoints too, as docs/providers.md says (undici 8
    // forwards plain-http requests to the proxy instead unless told).
    return new http.EnvHttpProxyAgent({ ...agentOptions, httpProxy, httpsProxy, noProxy, proxyTunnel: true });
  }
  return new http.Agent(agentOptions);
}

type Response = Awaited<ReturnType<HttpClient["fetch"]>>;

/** A provider speaking OpenAI-compatible streamed chat completions. */
class OpenAICompatibleProvider implements ModelProvider {
  readonly name: string;
  private dispatcher: Promise<Dispatcher> | undefined;

  constructor(private readonly settings: OpenAICompatibleSettings) {
    this.name = settings.name;
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelStreamBatch> {
    signal.throwIfAborted();
    const body = JSON.stringify(buildRequestBody(request, this.settings));
    const deadline = new RequestDeadline(signal, this.settings.requestTimeoutMs);
    try {
      yield* withRetries(() => this.attempt(body, deadline.signal), this.settings, deadline.signal);
    } catch (err) {
      // The first failures a user meets get the cause and the fix appended (hints.ts).
      throw withHint(deadline.error(err), { ...this.settings, model: request.model });
    } finally {
      deadline.release();
    }
  }

  /**
   * One HTTP attempt. Throws `AttemptFailure` for every failure it can classify; when `signal`
   * aborts, the request is aborted at once and the abort reason propagates.
   */
  private async *attempt(body: string, signal: AbortSignal): AsyncGenerator<ModelStreamBatch> {
    const http = await loadHttpClient();
    this.dispatcher ??= createDispatcher(this.settings);
    const dispatcher = await this.dispatcher;
    // The signal may have aborted while the modules or the dispatcher were loading: the
    // watchdog's signal is then aborted already, and fetch sends nothing.
    const { idleTimeoutMs, firstTokenTimeoutMs, endpoint } = this.settings;
    const watchdog = new AttemptWatchdog(signal, idleTimeoutMs, firstTokenTimeoutMs, endpoint);
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let finished = false;
    try {
      const response = await this.open(http, dispatcher, body, watchdog, signal);
      reader = response.body!.getReader();
      for await (const batch of this.readParts(reader, http.createParser, watchdog, signal)) {
        if (batch[batch.length - 1].type === "finish") finished = true;
        yield batch;
      }
    } finally {
      watchdog.release(finished);
      // Release the body (a no-op when it was read to its end).
      reader?.cancel().catch(() => {});
    }
  }

  /** Sends the request; returns a 200 response with an event-stream body, or throws its failure. */
  private async open(http: HttpClient, dispatcher: Dispatcher, body: string, watchdog: AttemptWatchdog, signal: AbortSignal): Promise<Response> {
    const { settings } = this;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
      "user-agent": "harness-bridge",
    };
    if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;

    watchdog.armIdle("waiting for the response headers");
    let response: Response;
    try {
      response = await http.fetch(settings.endpoint, { method: "POST", headers, body, signal: watchdog.signal, dispatcher });
    } catch (err) {
      throw watchdog.failure(err, "the request to");
    }

    if (!response.ok) {
      let text = "";
      try {
        watchdog.armIdle("reading the error response");
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
      watchdog.armIdle("reading a JSON response");
      const text = await response.text().catch((err: unknown) => {
        throw watchdog.failure(err, "reading the response of");
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
    return response;
  }

  /** The parts of an event stream, a batch per server event that has any, ending with its `finish` part; throws its failure. */
  private async *readParts(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    createParser: HttpClient["createParser"],
    watchdog: AttemptWatchdog,
    signal: AbortSignal,
  ): AsyncGenerator<ModelStreamBatch> {
    const { log } = this.settings;
    let finishReason: string | undefined;
    let sawDone = false;
    let sawContent = false;
    let sawToolCall = false;
    // The response's id and model (the first of each in this attempt), announced in a
    // `response-metadata` part just before the next part that is yielded anyway: yielding it
    // alone would commit the attempt (retry.ts retries only before the first part), and a
    // stream that dies after its role chunk must stay retryable.
    const response: ResponseMetadata = {};
    let unannounced = false;
    try {
      for await (const data of readEventData(reader, createParser, () => watchdog.armIdle("waiting for the event stream"), () => watchdog.disarmIdle(), log)) {
        if (data === "[DONE]") {
          sawDone = true;
          break;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          log("debug", () => `ignored a non-JSON data line: ${JSON.stringify(data.slice(0, 200))}`);
          continue;
        }
        let result: ChunkResult;
        try {
          result = mapChunk(parsed);
        } catch (err) {
          if (err instanceof ModelError) throw new AttemptFailure(err, false);
          throw err;
        }
        if (result.parts.length > 0 || result.finishReason !== undefined) watchdog.sawOutput();
        if (response.id === undefined && result.id !== undefined) {
          response.id = result.id;
          unannounced = true;
        }
        if (response.model === undefined && result.model !== undefined) {
          response.model = result.model;
          unannounced = true;
        }
        if (result.parts.length > 0) {
          for (const part of result.parts) {
            if (part.type === "tool-call-delta") sawToolCall = true;
            if (part.type !== "usage") sawContent = true;
          }
          if (unannounced) {
            unannounced = false;
            yield [{ type: "response-metadata", ...response }, ...result.parts];
          } else yield result.parts;
        }
        if (result.finishReason !== undefined) finishReason = result.finishReason;
      }
    } catch (err) {
      if (err instanceof AttemptFailure) throw err;
      if (finishReason === undefined || signal.aborted) throw watchdog.failure(err, "reading the event stream of");
      // Everything the answer needs has arrived; see "end of stream" below.
      log("debug", () => `the stream broke after finish_reason, accepted: ${describeNetworkError(err)}`);
    }

    // End of stream. A stream is complete when it has a finish_reason, or ends with `[DONE]`
    // after some output. Without a finish_reason, `[DONE]` after output is a complete answer
    // whose server never says why it finished (Snowflake Cortex): the finish is inferred from what
    // was streamed, tool calls -> tool_calls, else stop. With a finish_reason, `[DONE]` is not
    // needed: a server (or proxy) that closes without it loses at most a trailing usage chunk.
    // EOF without a finish_reason, or `[DONE]` without any output, is a truncated answer: a
    // model error (retried when nothing was yielded).
    if (finishReason === undefined && sawDone && sawContent) {
      finishReason = sawToolCall ? "tool_calls" : "stop";
      log("debug", () => `the stream ended with [DONE] but no finish_reason; inferred ${finishReason}`);
    }
    if (finishReason === undefined) {
      throw new AttemptFailure(new ModelError("the model stream ended before it finished", undefined, "stream"), true);
    }
    if (!sawDone) log("debug", () => "the stream ended without [DONE] after a finish_reason; accepted");
    const finish: ModelStreamPart = { type: "finish", finishReason: mapFinishReason(finishReason) };
    yield unannounced ? [{ type: "response-metadata", ...response }, finish] : [finish];
  }
}

/** Creates a provider from resolved settings. */
export function createOpenAICompatibleProvider(settings: OpenAICompatibleSettings): ModelProvider {
  return new OpenAICompatibleProvider(settings);
}
