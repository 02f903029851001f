/**
 * MCP's streamable HTTP transport (the SDK's), with every response body capped and the
 * requests in flight bounded.
 *
 * Why the cap: the SDK reads a JSON response whole and buffers an SSE event until its end, so a
 * hostile or broken server could make the bridge hold any amount of memory. Each response body
 * (a POST's answer, or one SSE stream) errors once it passed `MAX_RESPONSE_BYTES`; the call it
 * carried fails with that error, the bridge goes on.
 *
 * Why the bound: the SDK answers each request a server sends on its SSE stream (ping) with a
 * POST of its own, without waiting for the last one: a server flooding pings and slow to take
 * the answers made the bridge open thousands of sockets (descriptors every session needs) and
 * grow its memory without bound. At most `MAX_REQUESTS_IN_FLIGHT` of these answers wait for
 * their response's headers at once; the others queue, and a queue past `MAX_REQUESTS_WAITING`
 * is a server that does not take what it is sent: the connection ends, as a stdio server's
 * that does not read its input (stdio-transport.ts), and the call says why. Only the answers
 * are bounded, never the bridge's own requests and notifications (their number is the
 * sessions' own doing): the SDK never aborts the POST of a call it gave up on (a timeout, a
 * cancel), so a server that holds a call's headers until it answers held a slot for each
 * such call, and once the slots were full every later call, and the `notifications/cancelled`
 * that would free them, waited behind calls that never end.
 *
 * Why requests given up on are aborted: the SDK's fetch of a request's POST gets the
 * transport's signal only, so a request it gave up on (its timeout, its caller's abort: both
 * send `notifications/cancelled` for its id) kept its socket and the reading of its response
 * until the server ended them: a server that never answers held one socket per given-up call
 * for the bridge's life (descriptors every session needs). Each request of the bridge's own
 * is sent with a signal of its own (`sending`, read by `abortableFetch`), aborted when the
 * bridge cancels that request: its POST, its SSE stream and any resumption of that stream end
 * at once. Only that request's: another session's call on the same server goes on. The
 * `notifications/cancelled` itself is told, not awaited: its POST ends if the server has not
 * taken it within `CANCEL_NOTICE_MS`, or a server that takes nothing would hold that one
 * instead, one per given-up call.
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { AsyncLocalStorage } from "node:async_hooks";
import { guardHttpSockets } from "../http-socket-guard.js";
import type { Logger } from "../log.js";
import type { McpHttpServerConfig } from "../protocol/mcp-types.js";

/** Most bytes one response body may carry. */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** Answers to one server's requests waiting for their response's headers at once. */
export const MAX_REQUESTS_IN_FLIGHT = 64;
/** Answers to one server's requests queued behind those, past which the connection ends. */
export const MAX_REQUESTS_WAITING = 10_000;

/** How long the POST of a `notifications/cancelled` may wait for the server to take it. */
export const CANCEL_NOTICE_MS = 10_000;

/** At most `inFlight` callers at once; past `waiting` queued, `enter` rejects with `overflow`'s error. */
export class RequestLimiter {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(
    private readonly inFlight = MAX_REQUESTS_IN_FLIGHT,
    private readonly waiting = MAX_REQUESTS_WAITING,
    private readonly overflow: (error: Error) => void = () => undefined,
  ) {}

  /** Resolves to the slot's release once a slot is free; an abort while queued leaves the queue. */
  async enter(signal?: AbortSignal | null): Promise<() => void> {
    if (this.running >= this.inFlight) {
      if (this.queue.length >= this.waiting) {
        const error = new Error(`the MCP server does not take its requests (${this.running} waiting for an answer, ${this.queue.length} more queued)`);
        this.overflow(error);
        throw error;
      }
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener("abort", abort);
          resolve();
        };
        const abort = () => {
          const at = this.queue.indexOf(go);
          if (at !== -1) this.queue.splice(at, 1);
          reject(signal!.reason);
        };
        if (signal?.aborted) return abort();
        signal?.addEventListener("abort", abort, { once: true });
        this.queue.push(go);
      });
    }
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.queue.shift()?.();
    };
  }
}

/** `fetch` whose response bodies error past `limit` bytes. */
export function cappedFetch(limit = MAX_RESPONSE_BYTES): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > limit) controller.error(new Error(`the MCP server's response passed ${limit} bytes; it was cut off`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/**
 * The signal of the request whose `send` is running, in that send and what it started (its
 * response's SSE reading, a resumption of that stream): `undefined` in the sends of
 * notifications and answers, which no cancel concerns.
 */
const sending = new AsyncLocalStorage<AbortSignal | undefined>();

/** `fetch` that also ends when the request being sent (`sending`) is given up on: its socket and its body's reading are released. */
export function abortableFetch(inner: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const request = sending.getStore();
    if (!request) return inner(input, init);
    const signal = init?.signal ? AbortSignal.any([init.signal, request]) : request;
    return inner(input, { ...init, signal });
  };
}

/** The SDK's transport, its answers to the server's requests bounded (`answers`), and why the bridge ended it itself, if it did. */
export class HttpTransport extends StreamableHTTPClientTransport {
  closedBecause: string | undefined;
  /** Aborted by `close`: an answer still queued is dropped. */
  private readonly closing = new AbortController();
  /**
   * The bridge's requests not yet answered, by `Number(id)`: each one's abort ends its POST's
   * fetch. The SDK matches an answer to its request by `Number(id)` (a server may echo 7 as "7"
   * or "07"), so this does too, or an answer it took would leave its request here for good.
   */
  private readonly unanswered = new Map<number, AbortController>();

  constructor(
    url: URL,
    options: ConstructorParameters<typeof StreamableHTTPClientTransport>[1],
    private readonly answers = new RequestLimiter(),
    private readonly cancelNoticeMs = CANCEL_NOTICE_MS,
  ) {
    super(url, options);
  }

  /**
   * Sees each answer to the bridge's requests before the SDK does: an answered request is no
   * longer one to abort, unless its answer came on another stream than its own (the GET
   * stream, another request's): then its own POST, which nothing more will come on, ends now,
   * or a server holding it open would keep one socket per answered call. An answer read on the
   * request's own response runs in that send's context (`sending`), whose stream the server ends.
   */
  override async start(): Promise<void> {
    const deliver = this.onmessage;
    this.onmessage = (message) => {
      if ("id" in message && !("method" in message) && message.id !== undefined) {
        const request = this.take(message.id);
        if (request && sending.getStore() !== request.signal) request.abort(new Error(`MCP request ${message.id} was answered on another stream`));
      }
      deliver?.(message);
    };
    await super.start();
  }

  override async send(message: JSONRPCMessage, options?: Parameters<StreamableHTTPClientTransport["send"]>[1]): Promise<void> {
    if ("method" in message && "id" in message) {
      // A request of the bridge's own: sent with a signal of its own, kept until its answer, its cancel or a failed send.
      const request = new AbortController();
      const key = Number(message.id);
      this.unanswered.set(key, request);
      try {
        return await sending.run(request.signal, () => super.send(message, options));
      } catch (error) {
        if (this.unanswered.get(key) === request) this.unanswered.delete(key);
        throw error;
      }
    }
    if ("method" in message && message.method === "notifications/cancelled") {
      this.giveUp(message.params?.requestId as RequestId | undefined);
      return sending.run(AbortSignal.timeout(this.cancelNoticeMs), () => super.send(message, options));
    }
    if ("method" in message) return sending.run(undefined, () => super.send(message, options)); // a notification of the bridge's own
    const release = await this.answers.enter(this.closing.signal);
    try {
      await sending.run(undefined, () => super.send(message, options)); // the server takes an answer with its headers (202)
    } finally {
      release();
    }
  }

  /** The bridge gave up on request `id` (timeout, abort): its POST and the reading of its response end now. */
  private giveUp(id: RequestId | undefined): void {
    if (id !== undefined) this.take(id)?.abort(new Error(`the bridge gave up on MCP request ${id}`));
  }

  /** Request `id`'s abort, no longer kept: it was answered or given up on. */
  private take(id: RequestId): AbortController | undefined {
    const request = this.unanswered.get(Number(id));
    this.unanswered.delete(Number(id));
    return request;
  }

  override async close(): Promise<void> {
    this.closing.abort(new Error("the MCP connection is closed"));
    this.unanswered.clear(); // the transport's own signal ends every fetch
    await super.close();
  }
}

export function httpTransport(config: McpHttpServerConfig, logger?: Logger, cancelNoticeMs = CANCEL_NOTICE_MS): HttpTransport {
  // The global fetch is Node's own undici, whose HTTP/1 parser can still throw from a socket
  // handler (nodejs/undici#5360): such a throw fails the call, never the bridge (http-socket-guard.ts).
  guardHttpSockets((error, event) => logger?.warn(`an HTTP connection failed in its '${event}' handler and was closed, failing its request: ${error.stack ?? error.message}`));
  const answers = new RequestLimiter(MAX_REQUESTS_IN_FLIGHT, MAX_REQUESTS_WAITING, (error) => {
    transport.closedBecause ??= error.message;
    void transport.close();
  });
  const transport: HttpTransport = new HttpTransport(
    new URL(config.url),
    {
      fetch: abortableFetch(cappedFetch(MAX_RESPONSE_BYTES)),
      requestInit: config.headers ? { headers: config.headers } : undefined,
      // A lost SSE stream is retried a couple of times, not forever: a dead server becomes tool errors.
      reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 10_000, reconnectionDelayGrowFactor: 2, maxRetries: 2 },
    },
    answers,
    cancelNoticeMs,
  );
  return transport;
}
