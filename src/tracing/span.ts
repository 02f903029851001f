/**
 * A finished span as the tracer records it, its ids, and W3C Trace Context (`traceparent`).
 * Ids come from node:crypto (random, never all zeros); times are Unix nanoseconds, kept as
 * bigint because they pass 2^53.
 *
 * @module
 */
import { randomBytes } from "node:crypto";

export type AttributeValue = string | number | boolean | string[];

/** OTLP's SpanKind: INTERNAL for the agent's own work, CLIENT for a request to the model. */
export const SpanKind = { INTERNAL: 1, CLIENT: 3 } as const;
/** OTLP's StatusCode; UNSET is left out of the span. */
export const StatusCode = { OK: 1, ERROR: 2 } as const;

export interface SpanContext {
  traceId: string; // 32 lowercase hex
  spanId: string; // 16 lowercase hex
  /** The caller's trace flags (sampled: 01); the bridge records every span and passes this on. */
  flags: number;
}

export interface SpanData {
  context: SpanContext;
  parentSpanId?: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  status?: { code: number; message?: string };
}

export function newSpanId(): string {
  return nonZeroHex(8);
}

export function newTraceId(): string {
  return nonZeroHex(16);
}

function nonZeroHex(bytes: number): string {
  for (;;) {
    const hex = randomBytes(bytes).toString("hex");
    if (!/^0+$/.test(hex)) return hex;
  }
}

/** Now, in Unix nanoseconds (microsecond resolution: a double of milliseconds holds no more). */
export function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Parses a W3C `traceparent` (version 00, or a later one read as 00 as the spec asks).
 * `undefined` when it is not one: version ff, all-zero ids, wrong lengths, upper case, or
 * extra fields on version 00.
 */
export function parseTraceparent(value: string): SpanContext | undefined {
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: parseInt(flags, 16) };
}

/**
 * `text` as a span may carry it: at most `limit` UTF-16 units, and well-formed. A cut never
 * leaves half of a surrogate pair, and a lone surrogate (a hostile server's text, or any cut
 * made before this one) becomes U+FFFD: OTLP strings are UTF-8, which a lone surrogate has no
 * form in. The OpenTelemetry Collector mends it itself, but a receiver that checks proto3's
 * UTF-8 rule may refuse the whole request, every span of the batch with it.
 */
export function spanString(text: string, limit: number): string {
  let out = text;
  if (out.length > limit) {
    out = out.slice(0, limit);
    const last = out.charCodeAt(out.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) out = out.slice(0, -1);
  }
  return LONE_SURROGATE.test(out) ? out.replace(new RegExp(LONE_SURROGATE, "g"), "\ufffd") : out;
}

/** A high surrogate not followed by a low one, or a low one not after a high one (code units: no `u` flag). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags.toString(16).padStart(2, "0")}`;
}
