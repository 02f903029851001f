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
 * OTEL_TRACES_EXPORTER; and none switches them off. The two explicit offs are read here, so
 * that an environment that sets an endpoint for other programs and OTEL_SDK_DISABLED=true (or
 * OTEL_TRACES_EXPORTER=none) for this one loads no tracing code at all. The chunk decides the
 * rest (the protocol, the URL) and says why when it stays off.
 */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.split(",").some((name) => name.trim().toLowerCase() === "none")) return false;
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
