/**
 * Encodes spans as an OTLP/JSON `ExportTraceServiceRequest` (opentelemetry-proto's JSON
 * mapping): ids as hex strings, 64-bit integers and times as decimal strings, enums as
 * numbers, attribute values as `AnyValue` objects. One resource and one scope per request.
 * test/tracing/otlp-json.test.ts pins the shape; the collector test checks a real receiver
 * accepts it.
 *
 * @module
 */
import type { AttributeValue, SpanData } from "./span.js";

export const SCOPE_NAME = "harness-bridge";

type AnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } | { arrayValue: { values: AnyValue[] } };

function anyValue(value: AttributeValue): AnyValue {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { arrayValue: { values: value.map((v) => ({ stringValue: v })) } };
}

function keyValues(attributes: Record<string, AttributeValue>) {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));
}

/** One span as its OTLP/JSON object's text: the exporter encodes each as it is queued, to know its size. */
export function encodeSpan(span: SpanData): string {
  return JSON.stringify({
    traceId: span.context.traceId,
    spanId: span.context.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    flags: span.context.flags,
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: String(span.startNs),
    endTimeUnixNano: String(span.endNs),
    attributes: keyValues(span.attributes),
    ...(span.status ? { status: span.status } : {}),
  });
}

/** The request around spans already encoded (`encodeSpan`): the body is their texts joined, and this envelope. */
export function encodeRequest(resource: Record<string, string>, scopeVersion: string, encodedSpans: string[]): string {
  const head = JSON.stringify({ resource: { attributes: keyValues(resource) } }).slice(0, -1);
  const scope = JSON.stringify({ name: SCOPE_NAME, version: scopeVersion });
  return `{"resourceSpans":[${head},"scopeSpans":[{"scope":${scope},"spans":[${encodedSpans.join(",")}]}]}]}`;
}

export function encodeTraces(resource: Record<string, string>, scopeVersion: string, spans: SpanData[]): string {
  return encodeRequest(resource, scopeVersion, spans.map(encodeSpan));
}
