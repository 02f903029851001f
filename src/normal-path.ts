/**
 * Absolute paths in normal form, and `path.resolve`/`path.join` without normalizing again what is
 * in normal form already. A top-level leaf (tools/path-inside.ts, home-folder.ts
 * and the sandbox use it on the start-up path).
 *
 * Invariant: the answers are `path.resolve`'s and `path.join`'s. Why: every `path.resolve` and
 * `path.join` runs node's `normalizeString` over the path character by character; node's own
 * bootstrap brings that function and its per-character helper near V8's Maglev threshold, and
 * each further one on the start-up path can tip a compile before the `initialize` response
 * (bench/README.md, "Why the code does this").
 */
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

/** `path.resolve(p)`: `p` itself where it is in normal form already (`isNormalAbsolute`). */
export function resolvedPath(p: string): string {
  return isNormalAbsolute(p) ? p : path.resolve(p);
}

/** `path.join(dir, name)`: the two joined by `/` where that is in normal form already (`isNormalAbsolute`). */
export function joinedPath(dir: string, name: string): string {
  const joined = `${dir}/${name}`;
  return dir !== "" && isNormalAbsolute(joined) ? joined : path.join(dir, name);
}
