/**
 * Which turns are exported (OTEL_TRACES_SAMPLER, src/tracing/config.ts and genai-tracer.ts
 * `sample`). The bridge exported every turn whatever the variables or the caller said:
 *
 * - under a caller's span that is not sampled (`traceparent` flags 00: the caller's sampler
 *   dropped its trace), the turn's spans still went out, orphans in the backend;
 * - OTEL_TRACES_SAMPLER=always_off or a ratio were ignored, so an ops team could not bound
 *   what tracing costs them.
 *
 * Now the spec's default (parentbased_always_on) follows the caller's flag, and the spec's
 * samplers are honoured; one decision per turn covers its chat and tool spans and a subagent's.
 */
import { describe, expect, it } from "vitest";
import type { ToolOutput } from "../../src/tools/types.js";
import { readConfig, type Sampler, type TracingConfig } from "../../src/tracing/config.js";
import type { SpanExporter } from "../../src/tracing/exporter.js";
import { GenAiTracer } from "../../src/tracing/genai-tracer.js";
import type { SpanData } from "../../src/tracing/span.js";

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
const config = (env: NodeJS.ProcessEnv) => readConfig({ ...ENDPOINT, ...env }, "1") as TracingConfig;

/** A turn with a chat span and a `task` tool call that runs a subagent's turn; the spans exported. */
async function run(sampler: Sampler | undefined, traceparent?: string): Promise<SpanData[]> {
  const spans: SpanData[] = [];
  const exporter = { add: (s: SpanData) => spans.push(s), flushSoon: () => {}, shutdown: async () => {} } as unknown as SpanExporter;
  const tracer = new GenAiTracer(exporter, { captureContent: true, contentLimit: 1000, ...(sampler ? { sampler } : {}) });
  const turn = tracer.turn({ sessionId: "s", turn: 1, model: "m", provider: "p", traceparent, input: [{ type: "text", text: "hi" }] });
  turn.chat(1).end({ finishReason: "tool-calls" });
  await turn.tool({ type: "tool-call", id: "c", name: "task", arguments: {} }, async () => {
    const sub = tracer.turn({ sessionId: "sub", turn: 1, model: "m", provider: "p", input: [{ type: "text", text: "sub" }] });
    sub.end({ kind: "completed" });
    return { output: { content: [{ type: "text", text: "ok" }], isError: false } as ToolOutput };
  });
  turn.end({ kind: "completed" });
  return spans;
}

const parent = (traceId: string, flags: "00" | "01") => `00-${traceId}-00f067aa0ba902b7-${flags}`;
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

describe("sampling", () => {
  it("by default follows the caller's sampled flag: nothing of a turn under an unsampled span is exported", async () => {
    const { sampler } = config({});
    expect(await run(sampler, parent(TRACE, "00"))).toEqual([]);
    const sampled = await run(sampler, parent(TRACE, "01"));
    expect(sampled).toHaveLength(4);
    for (const span of sampled) expect(span.context.flags & 1).toBe(1);
    // No caller: a new trace, sampled.
    expect(await run(sampler)).toHaveLength(4);
  });

  it("exports nothing with always_off (or parentbased_always_off without a parent)", async () => {
    expect(await run(config({ OTEL_TRACES_SAMPLER: "always_off" }).sampler)).toEqual([]);
    expect(await run(config({ OTEL_TRACES_SAMPLER: "always_off" }).sampler, parent(TRACE, "01"))).toEqual([]);
    expect(await run(config({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }).sampler)).toEqual([]);
    expect(await run(config({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }).sampler, parent(TRACE, "01"))).toHaveLength(4);
  });

  it("always_on exports a turn under an unsampled caller, as sampled", async () => {
    const spans = await run(config({ OTEL_TRACES_SAMPLER: "always_on" }).sampler, parent(TRACE, "00"));
    expect(spans).toHaveLength(4);
    for (const span of spans) expect(span.context.flags & 1).toBe(1);
  });

  it("traceidratio decides from the trace id's random part, the same for every span of the trace", async () => {
    const sampler = config({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" }).sampler;
    expect(sampler).toEqual({ parentBased: false, ratio: 0.5 });
    // Not parent-based: the caller's flag is not followed, its trace id decides.
    expect(await run(sampler, parent(`${"a".repeat(18)}ffffffffffffff`, "00"))).toHaveLength(4);
    expect(await run(sampler, parent(`${"a".repeat(18)}00000000000001`, "01"))).toEqual([]);
    const some = await Promise.all(Array.from({ length: 200 }, () => run(sampler)));
    const exported = some.filter((spans) => spans.length > 0).length;
    expect(some.every((spans) => spans.length === 0 || spans.length === 4)).toBe(true);
    expect(exported).toBeGreaterThan(40);
    expect(exported).toBeLessThan(160);
  });

  it("reads the spec's sampler names and falls back to the default, with a note, on others", () => {
    expect(config({}).sampler).toEqual({ parentBased: true, ratio: 1 });
    expect(config({}).samplerNote).toBeUndefined();
    expect(config({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }).sampler).toEqual({ parentBased: true, ratio: 0.25 });
    expect(config({ OTEL_TRACES_SAMPLER: "ALWAYS_OFF" }).sampler).toEqual({ parentBased: false, ratio: 0 });
    for (const name of ["jaeger_remote", "xray", "sometimes"]) {
      const c = config({ OTEL_TRACES_SAMPLER: name });
      expect(c.sampler).toEqual({ parentBased: true, ratio: 1 });
      expect(c.samplerNote).toMatch(/not supported: using parentbased_always_on/);
    }
    for (const arg of ["2", "-1", "half", "NaN"]) {
      const c = config({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: arg });
      expect(c.sampler.ratio).toBe(1);
      expect(c.samplerNote).toMatch(/not a probability/);
    }
  });
});
