/**
 * The exporter's bounds (src/tracing/exporter.ts), which keep a slow or absent collector from
 * costing the bridge memory or its exit: the queue holds at most OTEL_BSP_MAX_QUEUE_SIZE spans
 * (the rest are dropped, with one warning), and shutdown sends what is queued. In bytes too:
 * a request carries at most MAX_BODY_BYTES (a receiver refuses a larger body whole: the
 * Collector's 20 MiB default lost every span of a 512-span batch of captured content), and the
 * queue holds at most MAX_QUEUE_BYTES.
 */
import * as http from "node:http";
import type * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readConfig, type TracingConfig } from "../../src/tracing/config.js";
import { MAX_BODY_BYTES, MAX_QUEUE_BYTES, SpanExporter } from "../../src/tracing/exporter.js";
import { newSpanId, newTraceId, nowNs, SpanKind, type SpanData } from "../../src/tracing/span.js";

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function receiver(): Promise<{ url: string; spans: string[]; bodies: number[] }> {
  const spans: string[] = [];
  const bodies: number[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      bodies.push(Buffer.byteLength(body));
      for (const rs of JSON.parse(body).resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push(s.name);
      res.writeHead(200).end("{}");
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, spans, bodies };
}

function span(name: string, attributes: SpanData["attributes"] = {}): SpanData {
  const t = nowNs();
  return { context: { traceId: newTraceId(), spanId: newSpanId(), flags: 1 }, name, kind: SpanKind.INTERNAL, startNs: t, endNs: t, attributes };
}

const quietLogger = (warnings: string[]) => ({ debug: () => {}, info: () => {}, warn: (m: string) => warnings.push(m), error: () => {} }) as never;

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
}

describe("SpanExporter", () => {
  it("keeps at most maxQueue spans, drops the rest with one warning, and sends the queue at shutdown", async () => {
    const { url, spans } = await receiver();
    // A schedule delay far past the test: only shutdown sends.
    const config = { ...(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url }, "1") as TracingConfig), maxQueue: 3, scheduleDelayMs: 3_600_000 };
    const warnings: string[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: (m: string) => warnings.push(m), error: () => {} };
    const exporter = new SpanExporter(config, "1", logger as never);
    for (let i = 0; i < 10; i++) exporter.add(span(`s${i}`));
    await exporter.shutdown();
    expect(spans).toEqual(["s0", "s1", "s2"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/queue is full \(3 spans\)/);
    // After shutdown nothing more is taken.
    exporter.add(span("late"));
    await exporter.shutdown();
    expect(spans).toEqual(["s0", "s1", "s2"]);
  });

  it("splits a batch so that no request passes MAX_BODY_BYTES, and sends every span", async () => {
    const { url, spans, bodies } = await receiver();
    const config = readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url }, "1") as TracingConfig;
    const exporter = new SpanExporter(config, "1", quietLogger([]));
    // 3-byte characters that JSON keeps as they are: 40 spans of ~1.5 MB, ~60 MB in all, under the batch count.
    const content = "中".repeat(500_000);
    for (let i = 0; i < 40; i++) exporter.add(span(`s${i}`, { "gen_ai.tool.call.result": content }));
    exporter.flushSoon();
    await until(() => spans.length >= 40);
    expect(spans).toHaveLength(40);
    expect(bodies.length).toBeGreaterThan(1);
    for (const size of bodies) expect(size).toBeLessThanOrEqual(MAX_BODY_BYTES);
    await exporter.shutdown();
  }, 60_000);

  it("holds at most MAX_QUEUE_BYTES of spans, dropping the rest with one warning", async () => {
    const { url, spans } = await receiver();
    const config = { ...(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url }, "1") as TracingConfig), scheduleDelayMs: 3_600_000 };
    const warnings: string[] = [];
    const exporter = new SpanExporter(config, "1", quietLogger(warnings));
    const mib = "x".repeat(1024 * 1024);
    const fit = Math.floor(MAX_QUEUE_BYTES / (1024 * 1024 + 512));
    for (let i = 0; i < fit + 10; i++) exporter.add(span(`s${i}`, { big: mib }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/queue is full \(\d+ bytes\)/);
    // Nothing was sent yet (no timer fired): what shutdown can send is what the queue kept.
    expect(spans).toHaveLength(0);
  }, 60_000);
});
