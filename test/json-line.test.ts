/**
 * JSON lines: whatever path a value takes (plain, or long strings in slices), the bytes are
 * exactly those of `JSON.stringify(value) + "\n"`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSON_LINE_SIZES, jsonLine, type JsonLineSizes } from "../src/json-line.js";

/** Tiny sizes, so that short generated strings take the long path and get sliced everywhere. */
const tiny: JsonLineSizes = { longString: 3, slice: 2, buffer: 5 };

function bytesOf(line: string | Iterable<Buffer>): Buffer {
  return typeof line === "string" ? Buffer.from(line) : Buffer.concat([...line]);
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
        const line = jsonLine(record, tiny);
        expect(bytesOf(line).equals(want)).toBe(true);
        // The endpoint knows a long line's last piece by its newline: no other piece holds one.
        if (typeof line !== "string") {
          const pieces = [...(jsonLine(record, tiny) as Iterable<Buffer>)];
          expect(pieces.map((p) => p.includes(0x0a))).toEqual(pieces.map((_, i) => i === pieces.length - 1));
        }
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
    expect(typeof line).not.toBe("string");
    const buffers = [...(line as Iterable<Buffer>)];
    expect(buffers.length).toBeGreaterThan(2);
    for (const buffer of buffers.slice(0, -1)) expect(buffer.length).toBeGreaterThanOrEqual(JSON_LINE_SIZES.buffer);
    expect(Buffer.concat(buffers).equals(expected(frame))).toBe(true);
    expect(JSON.parse(Buffer.concat(buffers).toString())).toEqual(JSON.parse(JSON.stringify(frame)));
  });

  it("encodes a long line only as its pieces are asked for", () => {
    let reached = false;
    const frame = {
      text: "x".repeat(10 * JSON_LINE_SIZES.buffer),
      get after() {
        reached = true;
        return "end";
      },
    };
    const pieces = (jsonLine(frame) as Iterable<Buffer>)[Symbol.iterator]();
    const first = pieces.next();
    expect(first.done).toBe(false);
    expect((first.value as Buffer).length).toBeLessThan(2 * JSON_LINE_SIZES.buffer);
    expect(reached).toBe(false);
    const rest: Buffer[] = [];
    for (let next = pieces.next(); !next.done; next = pieces.next()) rest.push(next.value);
    expect(reached).toBe(true);
    expect(Buffer.concat([first.value as Buffer, ...rest]).equals(expected(frame))).toBe(true);
  });
});
