/**
 * A local stand-in for DeepSeek's (OpenAI-compatible) chat completions endpoint, for tests.
 *
 * It listens on 127.0.0.1 (port 0), records every request, and answers each one with the next
 * scripted {@link Reply}: a status, headers, and a list of actions — raw byte writes (which may
 * cut a UTF-8 character in two), pauses, a stall that keeps the socket open, a connection reset.
 * Its SSE is shaped byte for byte like DeepSeek's: `data: {json}\n\n` frames, `: keep-alive`
 * comments, and `data: [DONE]\n\n` at the end.
 *
 * Before a scripted reply, it refuses what real servers refuse (server-rules.ts), without using up
 * a reply: `content: null` on an assistant message gets llama-cpp-python's HTTP 500, and a
 * request for a `deepseek-*` model that breaks thinking mode's `reasoning_content` rule gets
 * DeepSeek's 400. Refused requests are recorded in `requests` and `refusals`.
 *
 * Also here: {@link startRecordingProxy}, a tiny HTTP proxy (CONNECT tunnels and absolute-form
 * forwarding) that records what went through it.
 */
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { deepseekRefusal, llamaCppNullContentRefusal, type Refusal } from "./server-rules.js";

/** One scripted step of a reply. */
export type Action =
  /** Write raw bytes (after `delayMs`, if given). */
  | { type: "write"; data: string | Uint8Array; delayMs?: number }
  /** Wait. */
  | { type: "sleep"; ms: number }
  /** Send nothing more, keep the connection open until the client goes away. */
  | { type: "stall" }
  /** Send `: keep-alive` every `everyMs` until the client goes away (DeepSeek while a request is queued). */
  | { type: "keep-alive"; everyMs: number }
  /** Reset the connection (TCP RST). */
  | { type: "destroy" };

/** A scripted answer to one request. The response ends after the last action, unless it stalls or resets. */
export interface Reply {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** When false, the status line and headers are not sent before the actions (so `destroy` resets a request that got no response at all). Default true. */
  sendHeaders?: boolean;
  actions: Action[];
}

/** A request the server received. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON body, or undefined when it was not JSON. */
  body: any;
  /** When the request arrived (ms, `performance.now()`). */
  receivedAt: number;
  /** Resolves when the client's socket closes. */
  socketClosed: Promise<void>;
}

/** Headers DeepSeek sends with a stream. */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
});

export const KEEP_ALIVE = ": keep-alive\n\n";
export const DONE = "data: [DONE]\n\n";

/** One SSE data frame, exactly as DeepSeek writes it. */
export function frame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

let chunkCounter = 0;

/** A `chat.completion.chunk` shaped like DeepSeek's, with one choice. */
export function chunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: `fake-${++chunkCounter}`,
    object: "chat.completion.chunk",
    created: 1_750_000_000,
    model: "deepseek-flash",
    system_fingerprint: "fp_fake_prompt_cache",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...extra,
  };
}

/** A final usage-only chunk (empty `choices`), as sent with `stream_options.include_usage`. */
export function usageChunk(usage: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `fake-${++chunkCounter}`,
    object: "chat.completion.chunk",
    created: 1_750_000_000,
    model: "deepseek-flash",
    system_fingerprint: "fp_fake_prompt_cache",
    choices: [],
    usage,
    ...extra,
  };
}

/** DeepSeek's usage object. */
export function deepseekUsage(prompt: number, completion: number, cacheHit: number, reasoning?: number): Record<string, unknown> {
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheHit },
    prompt_cache_hit_tokens: cacheHit,
    prompt_cache_miss_tokens: prompt - cacheHit,
  };
  if (reasoning !== undefined) usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

export interface SseOptions {
  /** Cut the whole byte stream into slices of this many bytes (so frames and characters split). */
  sliceBytes?: number;
  /** Pause before each write. Default 0. */
  delayMs?: number;
  /** What happens after the last frame: the response ends (default), stalls, sends keep-alives forever, or the connection resets. */
  then?: "end" | "stall" | "keep-alive" | "destroy";
}

/** A 200 SSE reply writing `frames` (strings written as UTF-8), optionally in raw byte slices. */
export function sseReply(frames: string[], options: SseOptions = {}): Reply {
  const actions: Action[] = [];
  const delayMs = options.delayMs ?? 0;
  if (options.sliceBytes) {
    const bytes = Buffer.from(frames.join(""), "utf8");
    for (let i = 0; i < bytes.length; i += options.sliceBytes) {
      actions.push({ type: "write", data: bytes.subarray(i, i + options.sliceBytes), delayMs });
    }
  } else {
    for (const f of frames) actions.push({ type: "write", data: f, delayMs });
  }
  if (options.then === "stall") actions.push({ type: "stall" });
  if (options.then === "keep-alive") actions.push({ type: "keep-alive", everyMs: 50 });
  if (options.then === "destroy") actions.push({ type: "destroy" });
  return { status: 200, headers: { ...SSE_HEADERS }, actions };
}

/** A JSON reply (errors look like `{"error": {"message", "type", "param", "code"}}`). */
export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    actions: [{ type: "write", data: JSON.stringify(body) }],
  };
}

/** A DeepSeek-style error body. */
export function errorBody(message: string, type = "invalid_request_error", code: string | null = "invalid_request_error") {
  return { error: { message, type, param: null, code } };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The fake endpoint. Start with {@link FakeOpenAIServer.start}; close in `afterEach`. */
export class FakeOpenAIServer {
  readonly requests: RecordedRequest[] = [];
  /** The refusals answered (server-rules.ts), in order. */
  readonly refusals: Refusal[] = [];
  private readonly replies: Reply[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly server: http.Server, readonly url: string) {}

  /** Starts a server on 127.0.0.1 with a free port. */
  static async start(): Promise<FakeOpenAIServer> {
    let instance: FakeOpenAIServer | undefined;
    const server = http.createServer((req, res) => void instance!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    instance = new FakeOpenAIServer(server, `http://127.0.0.1:${port}`);
    server.on("connection", (socket) => {
      instance!.sockets.add(socket);
      socket.on("close", () => instance!.sockets.delete(socket));
    });
    return instance;
  }

  /** The port the server listens on. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Queues replies, answered in order, one per request. */
  enqueue(...replies: Reply[]): this {
    this.replies.push(...replies);
    return this;
  }

  /** Stops listening and destroys every open connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private refusalOf(body: any): Refusal | undefined {
    if (typeof body !== "object" || body === null) return undefined;
    return llamaCppNullContentRefusal(body) ?? (String(body.model).startsWith("deepseek") ? deepseekRefusal(body) : undefined);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const socket = req.socket;
    const socketClosed = socket.destroyed
      ? Promise.resolve()
      : new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const receivedAt = performance.now();
    const chunks: Buffer[] = [];
    for await (const data of req) chunks.push(data as Buffer);
    const rawBody = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    this.requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      rawBody,
      body,
      receivedAt,
      socketClosed,
    });

    const refusal = this.refusalOf(body);
    if (refusal) this.refusals.push(refusal);
    const reply = refusal
      ? jsonReply(refusal.status, refusal.body)
      : (this.replies.shift() ?? jsonReply(500, errorBody("fake server: no scripted reply for this request", "fake")));
    if (reply.sendHeaders !== false) {
      res.writeHead(reply.status ?? 200, reply.headers ?? {});
      res.flushHeaders();
    }
    for (const action of reply.actions) {
      if (socket.destroyed) return;
      switch (action.type) {
        case "write":
          if (action.delayMs) await sleep(action.delayMs);
          if (socket.destroyed) return;
          res.write(action.data);
          break;
        case "sleep":
          await sleep(action.ms);
          break;
        case "stall":
          await socketClosed;
          return;
        case "keep-alive":
          while (!socket.destroyed) {
            res.write(KEEP_ALIVE);
            await Promise.race([sleep(action.everyMs), socketClosed]);
          }
          return;
        case "destroy":
          // Let the bytes already written leave first, then send a TCP RST.
          await sleep(20);
          socket.resetAndDestroy();
          return;
      }
    }
    if (!socket.destroyed) res.end();
  }
}

/** A recording HTTP proxy: CONNECT tunnels and absolute-form forwarding. */
export interface RecordingProxy {
  url: string;
  /** `host:port` of every CONNECT. */
  connects: string[];
  /** The absolute URL of every forwarded request. */
  forwards: string[];
  close(): Promise<void>;
}

/** Starts a recording proxy on 127.0.0.1 with a free port. */
export async function startRecordingProxy(): Promise<RecordingProxy> {
  const connects: string[] = [];
  const forwards: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const target = req.url ?? "";
    forwards.push(target);
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      res.writeHead(400).end("absolute-form URL required");
      return;
    }
    const upstream = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = req.url ?? "";
    connects.push(target);
    const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
    const upstream = net.connect(port, host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    sockets.add(client);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  });
  server.on("connection", (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connects,
    forwards,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
