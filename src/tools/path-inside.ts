/** Lexical containment of absolute paths: a leaf module, so workspace.ts and sandbox/hidden.ts share it without importing each other. */
import * as path from "node:path";

/** An absolute POSIX path in normal form: `/`, or `/`-led names none of which is empty, `.` or `..`. */
const NORMAL_ABSOLUTE = /^(?:\/(?!\.\.?(?:\/|$))[^/]+)+$/;

/**
 * Whether `candidate` is `root` or below it, lexically (both absolute). Called for every file a
 * search shows, once per hidden path (sandbox/hidden.ts): two paths already in normal form (what
 * `path.resolve`, `path.join` and the kernel's `/proc/self/fd` links give) are compared as strings;
 * any other pair goes through `path.relative`, which normalizes them first — the same answer.
 */
export function isInside(root: string, candidate: string): boolean {
  if (path.sep === "/" && (root === "/" || NORMAL_ABSOLUTE.test(root)) && (candidate === "/" || NORMAL_ABSOLUTE.test(candidate))) {
    return root === "/" || candidate === root || (candidate.startsWith(root) && candidate.charCodeAt(root.length) === 47);
  }
  const rel = path.relative(root, candidate);
  // `..name` is a legal name inside; only a `..` segment leaves.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
