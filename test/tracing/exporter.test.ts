/**
 * The exporter's bounds (src/tracing/exporter.ts), which keep a slow or absent collector from
 * costing the bridge memory or its exit: the queue holds at most OTEL_BSP_MAX_QUEUE_SIZE spans
 * (the rest are dropped, with one warning), and shutdown sends what is queued.
 */
import * as http from "node:http";
import type * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readConfig, type TracingConfig } from "../../src/tracing/config.js";
import { SpanExporter } from "../../src/tracing/exporter.js";
import { newSpanId, newTraceId, nowNs, SpanKind, type SpanData } from "../../src/tracing/span.js";

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function receiver(): Promise<{ url: string; spans: string[] }> {
  const spans: string[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      for (const rs of JSON.parse(body).resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push(s.name);
      res.writeHead(200).end("{}");
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, spans };
}

function span(name: string): SpanData {
  const t = nowNs();
  return { context: { traceId: newTraceId(), spanId: newSpanId(), flags: 1 }, name, kind: SpanKind.INTERNAL, startNs: t, endNs: t, attributes: {} };
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
});
