/**
 * A collector's host name whose lookup never ends (a resolver that does not answer) must not
 * take the bridge's thread pool. getaddrinfo runs on one of libuv's 4 threads and cannot be
 * called off: an export cut at its timeout left its lookup running, and every later export
 * started another, until the pool was full and the bridge's file reads, writes and the model
 * server's own lookup waited behind them. Now at most one lookup of the exporter's is out at a
 * time; an export that would start a second fails at once (src/tracing/exporter.ts).
 */
import * as http from "node:http";
import { createRequire, syncBuiltinESMExports } from "node:module";
import type * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readConfig, type TracingConfig } from "../../src/tracing/config.js";
import { SpanExporter } from "../../src/tracing/exporter.js";
import { newSpanId, newTraceId, nowNs, SpanKind, type SpanData } from "../../src/tracing/span.js";

const dns = createRequire(import.meta.url)("node:dns") as typeof import("node:dns");
const realLookup = dns.lookup;
afterEach(() => {
  dns.lookup = realLookup;
  syncBuiltinESMExports();
});

function span(): SpanData {
  const t = nowNs();
  return { context: { traceId: newTraceId(), spanId: newSpanId(), flags: 1 }, name: "s", kind: SpanKind.INTERNAL, startNs: t, endNs: t, attributes: {} };
}

describe("SpanExporter and a host name that never resolves", () => {
  it("keeps at most one lookup out, however many exports time out meanwhile", async () => {
    let pending = 0;
    let started = 0;
    // A resolver that never answers: the callback is never called (as a hung getaddrinfo).
    dns.lookup = ((host: string, ...rest: unknown[]) => {
      if (host !== "collector.hung.example") return (realLookup as (...a: unknown[]) => unknown)(host, ...rest);
      started++;
      pending++;
    }) as unknown as typeof dns.lookup;
    syncBuiltinESMExports();
    const config = { ...(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.hung.example:4318" }, "1") as TracingConfig), timeoutMs: 50 };
    const warnings: string[] = [];
    const exporter = new SpanExporter(config, "1", { debug: () => {}, info: () => {}, warn: (m: string) => warnings.push(m), error: () => {} } as never);
    for (let i = 0; i < 8; i++) {
      exporter.add(span());
      exporter.flushSoon();
      await new Promise((r) => setTimeout(r, 150)); // past the export's timeout each time
    }
    expect(started).toBeGreaterThan(0);
    expect(pending).toBe(1);
    await exporter.shutdown();
  }, 30_000);

  it("still exports to a host name that resolves (the lookup passes its answer on)", async () => {
    let body = "";
    const server = http.createServer((req, res) => {
      req.on("data", (c) => (body += c));
      req.on("end", () => res.writeHead(200).end("{}"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    const config = readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://localhost:${port}` }, "1") as TracingConfig;
    const warnings: string[] = [];
    const exporter = new SpanExporter(config, "1", { debug: () => {}, info: () => {}, warn: (m: string) => warnings.push(m), error: () => {} } as never);
    exporter.add(span());
    await exporter.shutdown();
    await new Promise((r) => server.close(r));
    expect(warnings).toEqual([]);
    expect(JSON.parse(body).resourceSpans[0].scopeSpans[0].spans).toHaveLength(1);
  }, 30_000);
});
