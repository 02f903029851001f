/**
 * The tracing chunk's entry (built into `build/tracing.cjs` by scripts/build.mjs, loaded by
 * server/tracing-loader.ts only when an OTEL variable asks for traces): reads the
 * configuration and makes the tracer the runtime hands its turns to.
 *
 * @module
 */
import type { Tracer } from "../agent/turn-trace.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import { readConfig, urlForLog } from "./config.js";
import { SpanExporter } from "./exporter.js";
import { GenAiTracer } from "./genai-tracer.js";

export { parseTraceparent } from "./span.js";

/** The tracer the variables ask for, or `undefined` (with the reason logged) when they switch it off. */
export function createTracer(env: NodeJS.ProcessEnv, version: string, logger: Logger, redactor?: Redactor): Tracer | undefined {
  const config = readConfig(env, version);
  if ("off" in config) {
    if (config.misread) logger.warn(`tracing off: ${config.off}`);
    else logger.info(`tracing off: ${config.off}`);
    return undefined;
  }
  if (config.samplerNote) logger.warn(`tracing: ${config.samplerNote}`);
  logger.info(`tracing: exporting spans to ${urlForLog(config.url)}${config.captureContent ? " with message content" : ""}`);
  const { captureContent, contentLimit, sampler } = config;
  return new GenAiTracer(new SpanExporter(config, version, logger), { captureContent, contentLimit, redactor, sampler });
}
