/**
 * The line reader against a reference: whatever the chunking of the bytes (every offset, inside
 * a multi-byte character too), the lines it emits are those of the whole input split on "\n",
 * each less one trailing "\r" and decoded as UTF-8, with every line over the cap reported once
 * instead, and a last line without "\n" served at the end.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LineReader } from "../../src/transport/line-reader.js";

type Seen = Array<string | { overflow: true }>;

/** What the reader must emit for `input` (the whole byte stream) with `maxLineBytes`. */
function expected(input: Buffer, maxLineBytes: number): Seen {
  const out: Seen = [];
  let start = 0;
  for (;;) {
    const newline = input.indexOf(0x0a, start);
    const end = newline === -1 ? input.length : newline;
    if (newline === -1 && start === input.length) break;
    const line = input.subarray(start, end);
    if (line.length > maxLineBytes) out.push({ overflow: true });
    else out.push(line.subarray(0, line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length).toString("utf8"));
    if (newline === -1) break;
    start = newline + 1;
  }
  return out;
}

/** Feeds `input` cut at `cuts` (sorted offsets), pausing and resuming where asked; returns what came out. */
function read(input: Buffer, cuts: number[], maxLineBytes: number, pauseAfter: Set<number>): Seen {
  const seen: Seen = [];
  let ended = 0;
  let paused = false;
  const reader: LineReader = new LineReader({
    maxLineBytes,
    onLine: (line) => {
      seen.push(line);
      // A handler that pauses the reader (the endpoint's input flow control does) mid-chunk.
      if (pauseAfter.has(seen.length)) {
        reader.pause();
        paused = true;
      }
    },
    onOverflow: () => seen.push({ overflow: true }),
    onEnd: () => ended++,
  });
  let from = 0;
  for (const cut of [...cuts, input.length]) {
    // A copy per chunk, overwritten once read: a reader that kept a view of a partial line would
    // see garbage. (A chunk pushed while paused is held as it is, the stream's own Buffer.)
    const chunk = Buffer.from(input.subarray(from, cut));
    const wasPaused = paused;
    reader.push(chunk);
    if (!wasPaused) chunk.fill(0x21);
    from = cut;
    paused = false;
    reader.resume();
  }
  reader.end();
  while (ended === 0) {
    paused = false;
    reader.resume();
  }
  expect(ended).toBe(1);
  return seen;
}

// Multi-byte characters of every length, CR, LF, NUL and bytes that are not UTF-8.
const piece = fc.oneof(
  fc.constantFrom("a", "é", "€", "😀", "\r", "\n", "\r\n", "\0", "\n\n", '{"x":1}'),
  fc.string({ maxLength: 6 }),
);
const bytes = fc.oneof(
  { arbitrary: fc.array(piece, { maxLength: 30 }).map((p) => Buffer.from(p.join(""))), weight: 4 },
  fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a)),
  fc.array(fc.constantFrom(0x0a, 0x0d, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0x00, 0x61), { maxLength: 60 }).map((a) => Buffer.from(a)),
);

describe("LineReader", () => {
  it("emits the lines of the whole input whatever its chunking, pauses and line cap", () => {
    fc.assert(
      fc.property(
        bytes.chain((input) =>
          fc.record({
            input: fc.constant(input),
            cuts: fc.uniqueArray(fc.integer({ min: 0, max: input.length }), { maxLength: 12 }).map((c) => c.sort((a, b) => a - b)),
            maxLineBytes: fc.integer({ min: 0, max: 24 }),
            pauseAfter: fc.uniqueArray(fc.integer({ min: 1, max: 20 }), { maxLength: 4 }).map((p) => new Set(p)),
          }),
        ),
        ({ input, cuts, maxLineBytes, pauseAfter }) => {
          expect(read(input, cuts, maxLineBytes, pauseAfter)).toEqual(expected(input, maxLineBytes));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("splits a line at every byte offset, inside each multi-byte character too", () => {
    const input = Buffer.from('{"t":"é€😀"}\r\n{"u":"\u2028"}\nlast');
    for (let cut = 0; cut <= input.length; cut++) {
      for (const cap of [0, 7, 15, 16, 17, 1000]) expect(read(input, [cut], cap, new Set())).toEqual(expected(input, cap));
    }
  });
});
