/**
 * Decides, from the environment alone, whether traces are wanted, and loads the tracing chunk
 * (src/tracing/index.ts) only then. Invariant: with no OTEL variable that asks for traces,
 * nothing of src/tracing/ is loaded or evaluated, so start-up and turns cost what they did
 * before tracing existed (bench cold-start; docs/tracing.md has the figures).
 *
 * Built like the MCP chunk (mcp-loader.ts): in the binary `__TRACING_CHUNK__` names the
 * chunk to evaluate; run from source (the tests) it is undefined and the module is imported.
 *
 * @module
 */
import type { Tracer } from "../agent/turn-trace.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import { evaluateChunk } from "./chunk.js";

export type TracingModule = typeof import("../tracing/index.js");

declare const __TRACING_CHUNK__: string | undefined;

/**
 * Whether any variable asks for traces: an OTLP endpoint (general or for traces), or
 * OTEL_TRACES_EXPORTER. The chunk decides the rest (OTEL_SDK_DISABLED, `none`, the protocol).
 */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_TRACES_EXPORTER?.trim());
}

let loading: Promise<TracingModule> | undefined;

function loadTracing(): Promise<TracingModule> {
  loading ??= typeof __TRACING_CHUNK__ === "string" ? Promise.resolve().then(() => evaluateChunk<TracingModule>(__TRACING_CHUNK__ as string)) : import("../tracing/index.js");
  return loading;
}

/** The tracer for this process, or `undefined` when no variable asks for one or they switch it off; never rejects. */
export async function tracerFor(env: NodeJS.ProcessEnv, version: string, logger: Logger, redactor?: Redactor): Promise<Tracer | undefined> {
  if (!tracesWanted(env)) return undefined;
  try {
    return (await loadTracing()).createTracer(env, version, logger, redactor);
  } catch (error) {
    logger.warn(`tracing off: the tracer could not be loaded (${(error as Error).message})`);
    return undefined;
  }
}
