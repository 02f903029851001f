/**
 * grep's lines of a file ripgrep matched (src/tools/search/files.ts, `numberedLines`): only the
 * numbered lines are decoded, and each must be what splitting the whole decoded text gives —
 * CRLF and a final CR, no line after a final newline, invalid UTF-8, multibyte characters.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { numberedLines, splitLines } from "../../src/tools/search/files.js";

const piece = fc.oneof(
  fc.constantFrom("\n", "\r\n", "\r", "é", "漢", "😀", "function x() {}", ""),
  fc.string({ maxLength: 12 }),
  fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b).toString("latin1")),
);
const fileBytes = fc.oneof(
  fc.array(piece, { maxLength: 40 }).map((parts) => Buffer.from(parts.join(""), "utf8")),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), // raw bytes: invalid UTF-8, lone CRs
);

describe("numberedLines", () => {
  it("gives each numbered line as splitLines of the whole text does, and as many lines as the text has up to the largest number", () => {
    fc.assert(
      fc.property(fileBytes, fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 8 }), (bytes, picked) => {
        const numbers = picked.sort((a, b) => a - b);
        const whole = splitLines(bytes.toString("utf8"));
        const lines = numberedLines(bytes, numbers);
        const largest = numbers.length ? numbers[numbers.length - 1] : 0;
        expect(lines.length).toBe(Math.min(whole.length, largest));
        for (const n of numbers) if (n <= whole.length) expect(lines[n - 1]).toBe(whole[n - 1]);
      }),
      { numRuns: 2000 },
    );
  });

  it("reads no further than the last line asked for", () => {
    const bytes = Buffer.from("one\r\ntwo\nthree\n\xff\xfe not even text past here", "latin1");
    const two = numberedLines(bytes, [2]);
    expect(two).toHaveLength(2);
    expect(two[1]).toBe("two");
    expect(0 in two).toBe(false); // not decoded
    expect(numberedLines(bytes, [1, 3])[2]).toBe("three");
    expect(numberedLines(Buffer.from("a\nb\n"), [5])).toHaveLength(2);
    expect(numberedLines(Buffer.from(""), [1])).toHaveLength(0);
  });
});
