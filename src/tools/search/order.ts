/**
 * The order of search results: a folder's entries by name (byte order of their UTF-8), each
 * folder's contents in its place — the order of a sorted depth-first walk, which is the order
 * `rg --sort path` prints. So `a/x` comes before `a.txt` (the folder `a` sorts before the name
 * `a.txt`), unlike a plain comparison of whole path strings. A name that is not valid UTF-8
 * (raw-names.ts) sorts by its bytes, as ripgrep sorts it.
 */
import { bytesOf } from "../raw-names.js";

// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

function compareNames(a: string, b: string): number {
  if (ASCII.test(a) && ASCII.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(bytesOf(a), bytesOf(b));
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

type Keyed = { p: string; key: string | undefined };

/** With the separator replaced by NUL (which no name holds, and which sorts first), walk order is plain string order — for ASCII paths; others fall back to `comparePaths`. */
const keyed = (p: string): Keyed => ({ p, key: ASCII.test(p) ? p.replaceAll("/", "\0") : undefined });

function compareKeyed(a: Keyed, b: Keyed): number {
  return a.key !== undefined && b.key !== undefined ? (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) : comparePaths(a.p, b.p);
}

/** Paths sorted at once by `sortPathsInSlices`, and merged between two calls of its `turn`. */
const SORT_RUN = 4096;

/**
 * Paths sorted in walk order (`comparePaths`; fast: `keyed`), for a listing of any size on the
 * event loop: runs of `SORT_RUN` paths sorted, then merged in pairs, `turn` awaited between two
 * runs and every `SORT_RUN` paths merged (it gives the loop a turn when its time slice is over,
 * and may reject to stop the sort).
 */
export async function sortPathsInSlices(paths: readonly string[], turn: () => Promise<void> | undefined): Promise<string[]> {
  let runs: Keyed[][] = [];
  for (let i = 0; i < paths.length; i += SORT_RUN) {
    runs.push(paths.slice(i, i + SORT_RUN).map(keyed).sort(compareKeyed));
    await turn();
  }
  while (runs.length > 1) {
    const merged: Keyed[][] = [];
    for (let r = 0; r < runs.length; r += 2) {
      const [a, b] = [runs[r], runs[r + 1]];
      if (!b) {
        merged.push(a);
        continue;
      }
      const out: Keyed[] = [];
      let i = 0;
      let j = 0;
      while (i < a.length || j < b.length) {
        out.push(j >= b.length || (i < a.length && compareKeyed(a[i], b[j]) <= 0) ? a[i++] : b[j++]);
        if (out.length % SORT_RUN === 0) await turn();
      }
      merged.push(out);
    }
    runs = merged;
  }
  return (runs[0] ?? []).map((k) => k.p);
}
