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

/**
 * The text before the delta's own, for the last turn, step and type seen: a step's deltas share
 * it, so it is not made again per chunk (each concatenation is a string object to collect).
 */
const head = { turn: 0, step: 0, type: "", text: "" };

export function chunkDataJson(data: SessionEventDataMap["assistant/chunk"], sizes = JSON_LINE_SIZES): string | undefined {
  const chunk = data.chunk;
  if (chunk.type === "tool-call-delta") return jsonText(data, sizes);
  const text = chunk.text;
  if (text.length >= sizes.longString) return undefined;
  if (head.turn !== data.turn || head.step !== data.step || head.type !== chunk.type) {
    head.turn = data.turn;
    head.step = data.step;
    head.type = chunk.type;
    // `turn` and `step` are integers, which a template writes as JSON.stringify does.
    head.text = `{"turn":${data.turn},"step":${data.step},"chunk":{"type":"${chunk.type}","text":`;
  }
  return `${head.text}${JSON.stringify(text)}}}`;
}
