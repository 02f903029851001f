/**
 * The walk order of search results (src/tools/search/order.ts): sorted in slices, a listing of
 * any size comes out in the same order as sorted at once, the event loop given turns meanwhile.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { comparePaths, sortPathsInSlices } from "../../src/tools/search/order.js";

const name = fc.constantFrom("a", "a.txt", "b", "ab", "a b", "é", "z", "ÿ", "😀", "\uE000", "A", "_", "-", "a0");
const paths = fc.uniqueArray(fc.array(name, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/")), { maxLength: 300 });

describe("sortPathsInSlices", () => {
  it("gives comparePaths' order", async () => {
    await fc.assert(
      fc.asyncProperty(paths, async (list) => {
        const sorted = await sortPathsInSlices(list, () => undefined);
        expect(sorted).toEqual([...list].sort(comparePaths));
        for (let i = 1; i < sorted.length; i++) expect(comparePaths(sorted[i - 1], sorted[i])).toBeLessThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it("sorts a listing of many runs, awaiting its turn between them, and stops when the turn rejects", async () => {
    const marks = ["", "é", "😀", "\uE000", "/a", ".a"];
    const list = Array.from({ length: 20_000 }, (_, i) => `d${(i * 7919) % 97}${marks[i % marks.length]}/f${(i * 104_729) % 20_000}.txt`);
    let turns = 0;
    const sorted = await sortPathsInSlices(list, () => (turns++, Promise.resolve()));
    expect(sorted).toEqual([...list].sort(comparePaths));
    expect(turns).toBeGreaterThan(4);
    await expect(sortPathsInSlices(list, () => Promise.reject(new Error("cancelled")))).rejects.toThrow("cancelled");
  });
});
