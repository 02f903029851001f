/**
 * Where a session's turns start (src/agent/turn-starts.ts), which a rewind cuts back to: it
 * answers as a `Map` from turn number to `seq` would, whatever order the turns come in (a log
 * edited by hand may hold them out of order or twice), and a cut forgets the turn and every
 * later one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TurnStarts } from "../../src/agent/turn-starts.js";

type Op = { kind: "set"; turn: number; seq: number } | { kind: "drop"; turn: number } | { kind: "get"; turn: number };

const turn = fc.integer({ min: 1, max: 40 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), turn, seq: fc.integer({ min: 1, max: 1_000_000 }) }),
  fc.record({ kind: fc.constant("drop" as const), turn }),
  fc.record({ kind: fc.constant("get" as const), turn }),
);

describe("TurnStarts", () => {
  it("answers as a Map of turn → seq under any order of sets, cuts and reads", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const starts = new TurnStarts();
        const oracle = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === "set") {
            starts.set(o.turn, o.seq);
            oracle.set(o.turn, o.seq);
          } else if (o.kind === "drop") {
            starts.dropFrom(o.turn);
            for (const t of [...oracle.keys()]) if (t >= o.turn) oracle.delete(t);
          } else expect(starts.get(o.turn)).toBe(oracle.get(o.turn));
        }
        for (let t = 0; t <= 41; t++) expect(starts.get(t)).toBe(oracle.get(t));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps a long session's turns in order: each found, a cut forgets it and the later ones", () => {
    const starts = new TurnStarts();
    for (let t = 1; t <= 10_000; t++) starts.set(t, t * 6 + 1);
    expect(starts.get(1)).toBe(7);
    expect(starts.get(7_777)).toBe(7_777 * 6 + 1);
    expect(starts.get(10_001)).toBeUndefined();
    starts.dropFrom(5_000);
    expect(starts.get(4_999)).toBe(4_999 * 6 + 1);
    expect(starts.get(5_000)).toBeUndefined();
    expect(starts.get(9_999)).toBeUndefined();
    // Turn numbers go on from the last one after a rewind: a gap, then appends again.
    starts.set(10_002, 99);
    expect(starts.get(10_002)).toBe(99);
    expect(starts.get(5_001)).toBeUndefined();
  });
});
