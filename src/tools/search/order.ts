/**
 * The order of search results: a folder's entries by name (byte order of their UTF-8), each
 * folder's contents in its place — the order of a sorted depth-first walk, which is the order
 * `rg --sort path` prints. So `a/x` comes before `a.txt` (the folder `a` sorts before the name
 * `a.txt`), unlike a plain comparison of whole path strings.
 */

// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

function compareNames(a: string, b: string): number {
  if (ASCII.test(a) && ASCII.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Compares two `/`-separated relative paths in walk order. */
export function comparePaths(a: string, b: string): number {
  const pa = a.split("/");
  const pb = b.split("/");
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const c = compareNames(pa[i], pb[i]);
    if (c !== 0) return c;
  }
  return pa.length - pb.length;
}

/**
 * Sorts paths in walk order, fast: with the separator replaced by NUL (which no name holds, and
 * which sorts first), walk order is plain string order — for ASCII paths; others fall back to
 * `comparePaths`. Returns a new array.
 */
export function sortPaths(paths: readonly string[]): string[] {
  const keyed = paths.map((p) => ({ p, key: ASCII.test(p) ? p.replaceAll("/", "\0") : undefined }));
  keyed.sort((a, b) => (a.key !== undefined && b.key !== undefined ? (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) : comparePaths(a.p, b.p)));
  return keyed.map((k) => k.p);
}
