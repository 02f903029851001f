/**
 * The JSON text of an `assistant/chunk` event's data, the event a streamed turn emits once per
 * model delta.
 *
 * Invariant: the text is exactly `jsonText(data)` (json-line.ts): `JSON.stringify(data)` when no
 * string in it is long, `undefined` when one is (its lines are then made piece by piece).
 * Why not `jsonText` itself: a text or reasoning delta has one shape, so only its text needs
 * encoding; the generic way walks the data for long strings and has `JSON.stringify` visit three
 * objects, several times the cost of the rest of the chunk's frame (bench/README.md, "Issue 34,
 * round 7"). Tool-call deltas (a few per call, with optional fields) take the generic way.
 *
 * @module
 */
import { JSON_LINE_SIZES, jsonText } from "../json-line.js";
import type { SessionEventDataMap } from "../protocol/index.js";

export function chunkDataJson(data: SessionEventDataMap["assistant/chunk"], sizes = JSON_LINE_SIZES): string | undefined {
  const chunk = data.chunk;
  if (chunk.type === "tool-call-delta") return jsonText(data, sizes);
  const text = chunk.text;
  if (text.length >= sizes.longString) return undefined;
  // `turn` and `step` are integers, which a template writes as JSON.stringify does.
  return `{"turn":${data.turn},"step":${data.step},"chunk":{"type":"${chunk.type}","text":${JSON.stringify(text)}}}`;
}
