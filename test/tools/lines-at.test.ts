/**
 * grep's lines of a file ripgrep matched (src/tools/search/files.ts, `linesAt`): each line is
 * read from its byte offset (ripgrep's `--byte-offset`) to its end and decoded alone, and must be
 * what splitting the whole decoded text gives — CRLF and a final CR, invalid UTF-8, multibyte
 * characters, lines longer than a read; an offset that does not start a line of the bytes read
 * (the file changed since ripgrep read it) is dropped; nothing else of the file is read.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { linesAt, readBytes, splitLines, type LineMatch, type ReadAt } from "../../src/tools/search/files.js";

const piece = fc.oneof(
  fc.constantFrom("\n", "\r\n", "\r", "é", "漢", "😀", "function x() {}", ""),
  fc.string({ maxLength: 12 }),
  fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b).toString("latin1")),
);
const fileBytes = fc.oneof(
  fc.array(piece, { maxLength: 40 }).map((parts) => Buffer.from(parts.join(""), "utf8")),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), // raw bytes: invalid UTF-8, lone CRs
);

/** Every line of `bytes` as ripgrep numbers it: its number and where it starts. */
function allLines(bytes: Buffer): LineMatch[] {
  const out: LineMatch[] = [];
  for (let offset = 0, line = 1; offset < bytes.length; line++) {
    out.push({ line, offset });
    const nl = bytes.indexOf(10, offset);
    if (nl === -1) break;
    offset = nl + 1;
  }
  return out;
}

/** `readBytes`, with the ranges asked for written down. */
function recorded(bytes: Buffer): { read: ReadAt; ranges: [number, number][] } {
  const ranges: [number, number][] = [];
  const inner = readBytes(bytes);
  return { ranges, read: (pos, len) => (ranges.push([pos, len]), inner(pos, len)) };
}

describe("linesAt", () => {
  it("gives each line ripgrep matched as splitLines of the whole text does, whatever the read sizes", async () => {
    await fc.assert(
      fc.asyncProperty(fileBytes, fc.array(fc.boolean(), { maxLength: 60 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 9 }), fc.nat(12), async (bytes, pick, window, grow, headBytes) => {
        const whole = splitLines(bytes.toString("utf8"));
        const every = allLines(bytes);
        expect(every.length).toBe(whole.length);
        const matches = every.filter((_, i) => pick[i]);
        const head = bytes.subarray(0, headBytes);
        const got = await linesAt(readBytes(bytes), bytes.length, matches, head, window, grow);
        expect(got).toEqual(matches.map((m) => [m.line, whole[m.line - 1]]));
      }),
      { numRuns: 2000 },
    );
  });

  it("drops a match that does not start a line of the bytes read (the file changed since ripgrep read it)", async () => {
    const bytes = Buffer.from("one\r\ntwo\nthree\n", "latin1");
    const matches = [
      { line: 1, offset: 0 },
      { line: 2, offset: 6 }, // "wo": not after a newline
      { line: 3, offset: 9 },
      { line: 4, offset: 15 }, // at the end
      { line: 9, offset: 400 }, // past it
    ];
    expect(await linesAt(readBytes(bytes), bytes.length, matches)).toEqual([
      [1, "one"],
      [3, "three"],
    ]);
    // Data that ends before the size seen at open (the file shrank): its lines are dropped, not read past.
    const shrunk: ReadAt = async (pos, len) => bytes.subarray(pos, Math.min(pos + len, 9));
    expect(await linesAt(shrunk, 40, [{ line: 2, offset: 5 }, { line: 3, offset: 9 }, { line: 4, offset: 20 }])).toEqual([[2, "two"]]);
  });

  it("reads only the matched lines and the byte before each; lines near each other share a read", async () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${String(i + 1).padStart(4, "0")} ${"x".repeat(20)}`); // 30 bytes a line, with its newline
    lines[499] = `long ${"é".repeat(100)}`;
    const bytes = Buffer.from(`${lines.join("\n")}\n`);
    const { read, ranges } = recorded(bytes);
    const at = (n: number) => bytes.indexOf(Buffer.from(lines[n - 1]));
    const got = await linesAt(read, bytes.length, [3, 4, 500, 501, 900].map((n) => ({ line: n, offset: at(n) })), Buffer.alloc(0), 64, 16);
    expect(got).toEqual([3, 4, 500, 501, 900].map((n) => [n, lines[n - 1]]));
    const total = ranges.reduce((sum, [, len]) => sum + len, 0);
    expect(total).toBeLessThan(64 * 3 + 400);
    expect(ranges[0]).toEqual([at(3) - 1, 64]); // 3 and 4 in one read
    expect(ranges.length).toBeGreaterThan(3); // the long line 500 took more than one read
  });
});
