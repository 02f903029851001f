/**
 * JSON lines: whatever path a value takes (plain, or long strings in slices), the bytes are
 * exactly those of `JSON.stringify(value) + "\n"`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSON_LINE_SIZES, jsonLine, writeJsonLine, type JsonLineSizes } from "../src/json-line.js";

/** Tiny sizes, so that short generated strings take the long path and get sliced everywhere. */
const tiny: JsonLineSizes = { longString: 3, slice: 2, buffer: 5 };

function bytesOf(line: string | Buffer[]): Buffer {
  return typeof line === "string" ? Buffer.from(line) : Buffer.concat(line);
}

function expected(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value)}\n`);
}

// Lone surrogates, pairs, escapes, and text a JSON string has to escape.
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom("😀😀😀", "a😀", "\ud800", "x\udc00y", '"\\\n\t\u0000\u001f', "é中\u2028\u2029"),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("node"), { maxLength: 4 }),
    fc.dictionary(text, tie("node"), { maxKeys: 4 }),
  ),
})).node;

describe("jsonLine", () => {
  it("writes exactly the bytes of JSON.stringify plus a newline, long strings sliced at any size", () => {
    fc.assert(
      fc.property(fc.dictionary(text, value, { maxKeys: 5 }), (record) => {
        const want = expected(record);
        expect(bytesOf(jsonLine(record, tiny)).equals(want)).toBe(true);
        const pieces: Array<string | Buffer> = [];
        writeJsonLine(record, (piece) => pieces.push(piece), tiny);
        expect(Buffer.concat(pieces.map((p) => (typeof p === "string" ? Buffer.from(p) : p))).equals(want)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps a frame without a long string one plain string", () => {
    const frame = { jsonrpc: "2.0", method: "session.event", params: { event: { data: { chunk: { text: "abc" } } } } };
    expect(jsonLine(frame)).toBe(`${JSON.stringify(frame)}\n`);
  });

  it("sends a long message as Buffers of at least the batch size, never splitting a surrogate pair", () => {
    const long = "😀".repeat(100_000) + "\n\"end\"";
    const frame = { id: 1, content: [{ type: "text", text: long }, { type: "text", text: "short" }], absent: undefined };
    const line = jsonLine(frame);
    expect(Array.isArray(line)).toBe(true);
    const buffers = line as Buffer[];
    expect(buffers.length).toBeGreaterThan(2);
    for (const buffer of buffers.slice(0, -1)) expect(buffer.length).toBeGreaterThanOrEqual(JSON_LINE_SIZES.buffer);
    expect(Buffer.concat(buffers).equals(expected(frame))).toBe(true);
    expect(JSON.parse(Buffer.concat(buffers).toString())).toEqual(JSON.parse(JSON.stringify(frame)));
  });
});
