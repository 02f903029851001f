/**
 * A local DeepSeek-format server that replays a scenario's `server` table (format:
 * snapshots/README.md, "The deepseek scenarios"). The Python twin is scripts/fake_deepseek.py.
 * Before any table lookup it refuses what DeepSeek refuses (server-rules.ts): a history without
 * the `reasoning_content` thinking mode requires gets DeepSeek's 400, and is recorded as a problem.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { DONE, KEEP_ALIVE, SSE_HEADERS, chunk, frame, usageChunk } from "./fake-openai-server.js";
import { deepseekContextRefusal, deepseekRefusal } from "./server-rules.js";

type Entry =
  | { status: number; body?: unknown }
  | {
      /** `raw` is written as-is (a garbage line, a comment), the others as `data:` frames. */
      events: Array<{ delta?: Record<string, unknown>; finish_reason?: string; usage?: Record<string, unknown>; raw?: string }>;
      splitBytes?: number;
      /** Keep the stream open after the events (no `[DONE]`), until the client goes away. */
      stall?: boolean;
      /** With `stall`: send `: keep-alive` every this many ms meanwhile (DeepSeek while a request is queued). */
      keepAliveMs?: number;
      /** Destroy the connection after the events (a reset mid-stream; no `[DONE]`). */
      reset?: boolean;
      /**
       * Whether `[DONE]` ends the stream. Default: when an event has a `finish_reason` (a
       * scripted stream without one is cut short). `true` without a `finish_reason` is what
       * Snowflake Cortex sends: a complete stream that never says why it finished.
       */
      done?: boolean;
      /** The `model` every chunk names, as a gateway that routed the request elsewhere answers. Default: the request's model, as DeepSeek echoes it. */
      model?: string;
      /** The `id` every chunk carries. Default: `chatcmpl-fake-{n}`, one per response, as DeepSeek sends one id for all of a completion's chunks. */
      id?: string;
    };

export type ServerTable = Record<string, Entry[]>;

/**
 * The bridge's environment for talking to a local fake DeepSeek at `baseUrl`: a dummy key, no
 * proxy for loopback, plus `tuning` (HARNESS_* retry and timeout variables).
 */
export function fakeDeepSeekEnv(baseUrl: string, tuning: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DEEPSEEK_API_KEY: "sk-test-not-a-real-key",
    DEEPSEEK_BASE_URL: baseUrl,
    NO_PROXY: "127.0.0.1",
    no_proxy: "127.0.0.1",
    ...tuning,
  };
}

type WireMessage = { role: string; content?: unknown; tool_calls?: unknown[]; reasoning_content?: string };

const textOf = (m: WireMessage) =>
  typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? "").join("") : "";

export class FakeDeepSeek {
  table: ServerTable = {};
  /** When set, a request longer than this many tokens (server-rules.ts `requestTokens`) gets DeepSeek's context-length 400. */
  contextWindow: number | undefined;
  /** The context-length refusals sent (expected ones: not `problems`). */
  contextRefusals = 0;
  readonly problems: string[] = [];
  /** The parsed body of every request, in order. */
  readonly requests: Array<{ messages: WireMessage[]; [field: string]: unknown }> = [];
  /** The `authorization` header of every request, in order. */
  readonly authorizations: string[] = [];
  /** Completions answered, for their ids. */
  private completions = 0;
  private readonly server = http.createServer((req, res) => this.answer(req, res));
  private readonly sockets = new Set<import("node:net").Socket>();

  async start(): Promise<string> {
    this.server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** The entry keyed by the latest user message (a later turn), else by the session's first. */
  private entryFor(messages: WireMessage[]): Entry | undefined {
    const users = messages.flatMap((m, i) => (m.role === "user" ? [i] : []));
    if (users.length === 0) return undefined;
    const last = users[users.length - 1];
    const step = messages.slice(last + 1).filter((m) => m.role === "assistant").length;
    return (this.table[textOf(messages[last])] ?? this.table[textOf(messages[users[0]])])?.[step];
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.authorizations.push(req.headers.authorization ?? "");
    let raw = "";
    for await (const piece of req) raw += piece;
    const body = JSON.parse(raw || "{}") as { messages: WireMessage[]; model?: unknown };
    this.requests.push(body);
    const json = (status: number, payload: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(payload));
    const refusal = deepseekRefusal(body);
    if (refusal) {
      this.problems.push(`refused as DeepSeek would (HTTP ${refusal.status}): ${JSON.stringify(refusal.body)}`);
      return void json(refusal.status, refusal.body);
    }
    const tooLong = this.contextWindow === undefined ? undefined : deepseekContextRefusal(body, this.contextWindow);
    if (tooLong) {
      this.contextRefusals++;
      return void json(tooLong.status, tooLong.body);
    }
    const entry = this.entryFor(body.messages ?? []);
    if (!entry) {
      this.problems.push(`no scripted answer for ${raw.slice(0, 300)}`);
      return void json(400, { error: { message: "fake server: no scripted answer for this request" } });
    }
    if ("status" in entry) return void json(entry.status, entry.body ?? {});
    // Like DeepSeek: every chunk of one completion has the same id, and names the model that answered.
    const served = { id: entry.id ?? `chatcmpl-fake-${++this.completions}`, model: entry.model ?? (typeof body.model === "string" ? body.model : "deepseek-flash") };
    const frames = entry.events.map((e) => (e.raw !== undefined ? e.raw : frame(e.usage ? usageChunk(e.usage, served) : chunk(e.delta ?? {}, e.finish_reason ?? null, served))));
    if (!entry.stall && !entry.reset && (entry.done ?? entry.events.some((e) => e.finish_reason))) frames.push(DONE);
    const bytes = Buffer.from(frames.join(""));
    res.writeHead(200, SSE_HEADERS);
    const split = entry.splitBytes ?? bytes.length;
    for (let i = 0; i < bytes.length; i += split) {
      res.write(bytes.subarray(i, i + split));
      if (entry.splitBytes) await new Promise((r) => setTimeout(r, 2));
    }
    if (entry.reset) return void res.socket?.destroy();
    if (!entry.stall) return void res.end();
    while (entry.keepAliveMs && res.socket && !res.socket.destroyed) {
      res.write(KEEP_ALIVE);
      await new Promise((r) => setTimeout(r, entry.keepAliveMs));
    }
    // A stalled stream stays open until the client goes away or stop() destroys the socket.
  }
}
