/**
 * The depth check every request frame and tool call passes: levels counted as documented, at the
 * limit and past it, own keys only, at any depth without recursion.
 */
import { describe, expect, it } from "vitest";
import { exceedsDepth } from "../src/json-depth.js";

/** `depth` levels of alternating objects and arrays around a scalar. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

describe("exceedsDepth", () => {
  it("counts a scalar as depth 0 and each object or array as one level, at the limit and past it", () => {
    expect(exceedsDepth(1, 0)).toBe(false);
    expect(exceedsDepth(null, 0)).toBe(false);
    expect(exceedsDepth({}, 0)).toBe(true);
    expect(exceedsDepth([], 1)).toBe(false);
    for (const limit of [1, 2, 3, 128]) {
      expect(exceedsDepth(nested(limit), limit)).toBe(false);
      expect(exceedsDepth(nested(limit + 1), limit)).toBe(true);
    }
  });

  it("finds the deep path among shallow siblings, in objects and in arrays", () => {
    const deep = nested(10);
    expect(exceedsDepth({ a: 1, b: [2, { c: 3 }], d: deep }, 10)).toBe(true);
    expect(exceedsDepth({ a: 1, b: [2, { c: 3 }], d: deep }, 11)).toBe(false);
    expect(exceedsDepth([0, "x", [deep]], 11)).toBe(true);
  });

  it("reads an object's own keys, `__proto__` included as JSON.parse makes it", () => {
    expect(exceedsDepth(JSON.parse('{"__proto__":{"a":{"b":1}}}'), 2)).toBe(true);
    expect(exceedsDepth(JSON.parse('{"__proto__":{"a":{"b":1}}}'), 3)).toBe(false);
    expect(exceedsDepth(Object.create({ inherited: nested(5) }), 1)).toBe(false);
  });

  it("takes any depth without recursing", () => {
    expect(exceedsDepth(nested(100_000), 128)).toBe(true);
  });
});
