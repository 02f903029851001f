/**
 * An `assistant/chunk` event's data is encoded as `jsonText` would (the bytes the wire always
 * carried): `JSON.stringify(data)`, or `undefined` when a string in it is long.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkDataJson } from "../../src/agent/chunk-json.js";
import { JSON_LINE_SIZES, jsonText, type JsonLineSizes } from "../../src/json-line.js";
import type { SessionEventDataMap } from "../../src/protocol/index.js";

type ChunkData = SessionEventDataMap["assistant/chunk"];

// Lone surrogates, pairs, escapes, and text a JSON string has to escape.
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("", "😀😀😀", "a😀", "\ud800", "x\udc00y", '"\\\n\t\u0000\u001f', "é中\u2028\u2029", "</script>"),
);
const chunk = fc.oneof(
  fc.record({ type: fc.constant("text-delta" as const), text }),
  fc.record({ type: fc.constant("reasoning-delta" as const), text }),
  fc.record(
    { type: fc.constant("tool-call-delta" as const), index: fc.nat(), id: text, name: text, argumentsDelta: text },
    { requiredKeys: ["type", "index", "argumentsDelta"] },
  ),
);
// Mostly small numbers, so that consecutive runs share a turn and step (the encoder keeps the
// last one's text before the delta) as often as they differ.
const count = fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: 1e9 }));
const data = fc.record({ turn: count, step: count, chunk }) as fc.Arbitrary<ChunkData>;

describe("chunkDataJson", () => {
  it("is JSON.stringify of the data, for every kind of delta, in any order of turns, steps and kinds", () => {
    fc.assert(
      fc.property(fc.array(data, { minLength: 1, maxLength: 8 }), (run) => {
        for (const d of run) expect(chunkDataJson(d)).toBe(JSON.stringify(d));
      }),
      { numRuns: 1000 },
    );
  });

  it("is jsonText's answer when a string is long (undefined: the line is made piece by piece)", () => {
    // Longer than every constant of the data (its type names), as the real size is by far.
    const small: JsonLineSizes = { ...JSON_LINE_SIZES, longString: 16 };
    fc.assert(fc.property(data, (d) => {
      expect(chunkDataJson(d, small)).toBe(jsonText(d, small));
    }), { numRuns: 2000 });
    const long = "x".repeat(JSON_LINE_SIZES.longString);
    expect(chunkDataJson({ turn: 1, step: 1, chunk: { type: "text-delta", text: long } })).toBeUndefined();
    expect(chunkDataJson({ turn: 1, step: 1, chunk: { type: "text-delta", text: long.slice(1) } })).toBe(JSON.stringify({ turn: 1, step: 1, chunk: { type: "text-delta", text: long.slice(1) } }));
  });
});
