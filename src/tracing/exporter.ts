/**
 * Sends finished spans to the collector, off the turn's path: `add` only pushes onto a bounded
 * queue and arms a timer; the POST happens later, one request at a time, each with a timeout.
 * So a collector that is down, slow or hostile costs a turn nothing: spans past the queue's
 * bound are dropped (counted, warned once), a failed request is dropped rather than retried
 * (the next batch tries again), and the timer is unref'd so it never keeps the process alive.
 * `shutdown` sends what is queued and resolves within its bound whatever the collector does.
 *
 * Spans are queued encoded (OTLP/JSON text), so both bounds are also in bytes: a request
 * carries at most MAX_BODY_BYTES (a receiver refuses a larger body whole — the Collector's
 * default limit is 20 MiB, and 512 spans of captured content pass it: every span of the batch
 * was lost), and the queue holds at most MAX_QUEUE_BYTES whatever the span count.
 *
 * @module
 */
import * as dns from "node:dns";
import * as http from "node:http";
import * as https from "node:https";
import type { Logger } from "../log.js";
import { urlForLog, type TracingConfig } from "./config.js";
import { encodeRequest, encodeSpan } from "./otlp-json.js";
import type { SpanData } from "./span.js";

/** The most a shutdown waits for the collector, whatever OTEL_EXPORTER_OTLP_TIMEOUT says: exiting must stay prompt. */
export const SHUTDOWN_BOUND_MS = 2_000;
/** The most of a collector's answer that is read (for the warning); the rest is discarded. */
const MAX_ANSWER_BYTES = 4096;
/** The most one export request carries (spans are never split: a single larger span goes alone). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The most the queue holds, in encoded bytes, beside OTEL_BSP_MAX_QUEUE_SIZE's span count. */
export const MAX_QUEUE_BYTES = 64 * 1024 * 1024;

/** A queued span: its OTLP/JSON text and that text's size in bytes. */
interface Encoded {
  json: string;
  bytes: number;
}

export class SpanExporter {
  private queue: Encoded[] = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The request in flight; at most one at a time. */
  private sending: Promise<void> | undefined;
  /** How many spans the request in flight carries. */
  private sendingCount = 0;
  private dropped = 0;
  private warned = false;
  private stopped = false;
  /** A host-name lookup of ours still running (it may outlive its export, see `lookup`). */
  private looking = false;

  constructor(
    private readonly config: TracingConfig,
    private readonly version: string,
    private readonly logger: Logger,
  ) {}

  /** Queues a finished span; never blocks, never throws. */
  add(span: SpanData): void {
    if (this.stopped) return;
    if (this.queue.length >= this.config.maxQueue) {
      this.dropped++;
      this.warnOnce(`the trace export queue is full (${this.config.maxQueue} spans): dropping spans until the collector catches up`);
      return;
    }
    const json = encodeSpan(span);
    const bytes = Buffer.byteLength(json);
    if (this.queuedBytes + bytes > MAX_QUEUE_BYTES) {
      this.dropped++;
      this.warnOnce(`the trace export queue is full (${MAX_QUEUE_BYTES} bytes): dropping spans until the collector catches up`);
      return;
    }
    this.queue.push({ json, bytes });
    this.queuedBytes += bytes;
    this.schedule(this.queue.length >= this.config.maxBatch ? 0 : this.config.scheduleDelayMs);
  }

  /** A turn ended: export soon (not now: the turn's own work finishes first). */
  flushSoon(): void {
    if (this.queue.length > 0) this.schedule(0);
  }

  /** Sends what is queued, waiting at most SHUTDOWN_BOUND_MS (or the export timeout, if shorter). */
  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const bound = Math.min(SHUTDOWN_BOUND_MS, this.config.timeoutMs);
    const deadline = Date.now() + bound;
    const drain = (async () => {
      while ((this.sending || this.queue.length > 0) && Date.now() < deadline) {
        await (this.sending ?? this.sendBatch(deadline - Date.now()));
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drain, new Promise<void>((resolve) => (timer = setTimeout(resolve, bound)))]);
    clearTimeout(timer);
    const lost = this.queue.length + (this.sending ? this.sendingCount : 0);
    if (lost > 0) this.logger.warn(`tracing: ${lost} spans may not have been exported: the collector did not answer within ${bound} ms`);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer && delayMs > 0) return; // an earlier timer already covers it
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pump();
    }, delayMs);
    this.timer.unref();
  }

  private async pump(): Promise<void> {
    if (this.sending) return; // the one in flight re-arms when it ends
    while (this.queue.length > 0 && !this.stopped) await this.sendBatch(this.config.timeoutMs);
  }

  private sendBatch(timeoutMs: number): Promise<void> {
    // Up to maxBatch spans and MAX_BODY_BYTES, and always at least one span.
    let taken = 0;
    let bytes = 0;
    while (taken < this.queue.length && taken < this.config.maxBatch && (taken === 0 || bytes + this.queue[taken].bytes <= MAX_BODY_BYTES)) bytes += this.queue[taken++].bytes;
    const batch = this.queue.splice(0, taken);
    if (batch.length === 0) return Promise.resolve();
    this.queuedBytes -= bytes;
    this.sendingCount = batch.length;
    const body = encodeRequest(this.config.resource, this.version, batch.map((e) => e.json));
    this.sending = this.post(body, Math.max(1, timeoutMs))
      .catch((error: Error) => this.warnOnce(`could not export ${batch.length} spans to ${urlForLog(this.config.url)}: ${error.message}`))
      .finally(() => {
        this.sending = undefined;
      });
    return this.sending;
  }

  private post(body: string, timeoutMs: number): Promise<void> {
    const url = new URL(this.config.url);
    const send = url.protocol === "https:" ? https.request : http.request;
    return new Promise<void>((resolve, reject) => {
      const request = send(
        url,
        {
          method: "POST",
          headers: { ...this.config.headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          timeout: timeoutMs,
          agent: false,
          lookup: this.lookup,
        },
        (response) => {
          let answer = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            if (answer.length < MAX_ANSWER_BYTES) answer += chunk.slice(0, MAX_ANSWER_BYTES - answer.length);
          });
          response.on("error", reject);
          response.on("end", () => {
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve();
            else reject(new Error(`HTTP ${status}${answer ? `: ${answer.replace(/\s+/g, " ").slice(0, 200)}` : ""}`));
          });
        },
      );
      // The whole exchange is bounded, not only each idle gap: a collector that trickles bytes is cut off too.
      const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      deadline.unref();
      request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", reject);
      request.on("close", () => clearTimeout(deadline));
      request.end(body);
    });
  }

  /**
   * dns.lookup, one at a time. getaddrinfo holds one of libuv's 4 threads until the resolver
   * answers and cannot be called off: against a resolver that never answers, each export cut
   * at its timeout left its lookup running and the next export started one more, until the
   * pool was full and the bridge's file work and the model server's lookup waited behind them.
   * So while one is out, an export fails at once instead (the next batch tries again).
   */
  private readonly lookup = ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    if (this.looking) {
      callback(Object.assign(new Error(`the collector's host name ${hostname} is still being looked up`), { code: "ENOTFOUND" }));
      return;
    }
    this.looking = true;
    dns.lookup(hostname, options, (...args: unknown[]) => {
      this.looking = false;
      (callback as (...a: unknown[]) => void)(...args);
    });
  }) as unknown as typeof dns.lookup;

  private warnOnce(message: string): void {
    if (this.warned) return;
    this.warned = true;
    this.logger.warn(`tracing: ${message} (further export failures are not logged)`);
  }
}
