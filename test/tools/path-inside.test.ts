/**
 * `isInside` (src/tools/path-inside.ts) compares two paths in normal form as strings and any
 * other pair through `path.relative`: both must give the same answer, for every pair.
 */
import * as path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isNormalAbsolute, joinedPath, resolvedPath } from "../../src/normal-path.js";
import { isInside } from "../../src/tools/path-inside.js";

/** The answer from `path.relative` alone (what isInside was before the string comparison). */
function insideByRelative(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

const segment = fc.constantFrom("a", "b", "ab", "a.b", "..a", "a..", ".", "..", "", "...", " ", "é");
const absolute = fc.array(segment, { maxLength: 5 }).chain((parts) =>
  fc.constantFrom("", "/").map((tail) => `/${parts.join("/")}${tail}`),
);

describe("isInside", () => {
  it("answers as path.relative does, for normal and unnormalized absolute paths", () => {
    fc.assert(
      fc.property(absolute, absolute, fc.boolean(), (root, other, prefixed) => {
        // Often one path extends the other, the case the string comparison must get right.
        const candidate = prefixed ? `${root}${other}` : other;
        expect(isInside(root, candidate)).toBe(insideByRelative(root, candidate));
        expect(isInside(candidate, root)).toBe(insideByRelative(candidate, root));
      }),
      { numRuns: 5000 },
    );
  });

  it("takes what path.resolve gives as normal form (the hidden paths are compared as strings on that ground), and resolvedPath gives what path.resolve gives", () => {
    fc.assert(
      fc.property(absolute, (p) => {
        expect(isNormalAbsolute(path.resolve(p))).toBe(true);
        if (isNormalAbsolute(p)) expect(path.resolve(p)).toBe(p);
        expect(resolvedPath(p)).toBe(path.resolve(p));
        expect(resolvedPath(p.slice(1))).toBe(path.resolve(p.slice(1)));
      }),
      { numRuns: 2000 },
    );
  });

  it("joinedPath gives what path.join gives, for absolute, relative and empty folders and any name", () => {
    const folder = fc.oneof(absolute, absolute.map((p) => p.slice(1)));
    fc.assert(
      fc.property(folder, segment, (dir, name) => {
        expect(joinedPath(dir, name)).toBe(path.join(dir, name));
      }),
      { numRuns: 5000 },
    );
  });

  it("says normal form exactly as its definition: `/`-led names none of which is empty, `.` or `..`", () => {
    const definition = /^(?:\/(?!\.\.?(?:\/|$))[^/]+)+$/;
    fc.assert(
      fc.property(absolute, fc.constantFrom("", "/", ".", "..", "//", "/.", "/.."), fc.boolean(), (p, tail, led) => {
        const q = led ? `${p}${tail}` : `${tail}${p}`.slice(1);
        expect(isNormalAbsolute(q)).toBe(q === "/" || definition.test(q));
      }),
      { numRuns: 5000 },
    );
    for (const p of ["", "/", "//", "/.", "/..", "/...", "/a/.", "/a/..", "/a/...", "/.a", "/a/./b", "/a/../b", "/a//b", "/a/", "a/b", "/a\nb"]) {
      expect(isNormalAbsolute(p), p).toBe(p === "/" || definition.test(p));
    }
  });

  it("holds at the edges: the root itself, a sibling sharing a prefix, the file-system root", () => {
    expect(isInside("/w/ab", "/w/ab")).toBe(true);
    expect(isInside("/w/ab", "/w/ab/c")).toBe(true);
    expect(isInside("/w/ab", "/w/abc")).toBe(false);
    expect(isInside("/w/ab", "/w")).toBe(false);
    expect(isInside("/", "/x/y")).toBe(true);
    expect(isInside("/w/ab", "/w/ab/../abc")).toBe(false);
    expect(isInside("/w/ab/", "/w/ab/c")).toBe(true);
    expect(isInside("/w/ab", "/w/ab/..c")).toBe(true);
  });
});
