/** Lexical containment of absolute paths: a leaf module, so workspace.ts and sandbox/hidden.ts share it without importing each other. */
import * as path from "node:path";

/**
 * Whether `p` is an absolute path in normal form (what `path.resolve`, `path.join` of such paths
 * and the kernel's `/proc/self/fd` links give), on a system whose separator is `/`: `/` itself,
 * or `/`-led names none of which is empty, `.` or `..`. Said with native string searches, not a
 * regular expression: the sandbox's rules ask this of every pair of their paths on the start-up
 * path, where a regular expression still runs in V8's regexp interpreter (bench/README.md,
 * "Why the code does this").
 */
export function isNormalAbsolute(p: string): boolean {
  if (path.sep !== "/") return false;
  if (p === "/") return true;
  return (
    p.charCodeAt(0) === 47 &&
    !p.endsWith("/") &&
    !p.endsWith("/.") &&
    !p.endsWith("/..") &&
    !p.includes("//") &&
    !p.includes("/./") &&
    !p.includes("/../")
  );
}

/**
 * `path.resolve(p)`, by `p` itself where it is in normal form already (`isNormalAbsolute`): the
 * same answer. On the start-up path every `path.resolve` runs node's `normalizeString` over the
 * path character by character, and enough of them get that function compiled by V8 (Maglev)
 * before the `initialize` response (bench/README.md, "Why the code does this").
 */
export function resolvedPath(p: string): string {
  return isNormalAbsolute(p) ? p : path.resolve(p);
}

/** `isInside` for two paths already known to be in normal form (`isNormalAbsolute`): a string comparison. */
export function isInsideNormal(root: string, candidate: string): boolean {
  return root === "/" || candidate === root || (candidate.startsWith(root) && candidate.charCodeAt(root.length) === 47);
}

/**
 * Whether `candidate` is `root` or below it, lexically (both absolute). Called for every file a
 * search shows: two paths in normal form are compared as strings (`isInsideNormal`); any other
 * pair goes through `path.relative`, which normalizes them first — the same answer.
 */
export function isInside(root: string, candidate: string): boolean {
  if (isNormalAbsolute(root) && isNormalAbsolute(candidate)) return isInsideNormal(root, candidate);
  const rel = path.relative(root, candidate);
  // `..name` is a legal name inside; only a `..` segment leaves.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
