/**
 * One `.gitignore` file's rules, indexed so that a path costs a few lookups rather than one
 * regular expression per rule: a repository's rules file is untrusted, and one of 10,000 rules
 * would otherwise cost every entry of the walk 10,000 tests.
 *
 * The rules are the `ignore` package's parse (its pattern grammar, its regular expressions):
 * this module only decides which of them to test. git's answer is the last rule that matches,
 * so each structure below yields the highest index among its rules that match, and the verdict is
 * that of the highest index overall — the same rule a scan from the last rule to the first stops
 * at, whatever the signs of the rules in between.
 *
 * - a plain name (`build`, `build/`): the path's last segment, in a map;
 * - `*.ext` and `name*` (one leading or trailing `*`, the rest plain): the last segment's
 *   suffixes and prefixes of each length a rule has, in maps;
 * - a plain path (`/a/b`, `a/b/`): the whole path, in a map;
 * - any other rule is tested with its own regular expression, but only when the longest plain
 *   run of its pattern (which every path it matches contains) is in the path, and only while its
 *   index is above the best match found so far.
 */
import type { Ignore } from "ignore";

export interface Verdict {
  ignored: boolean;
  unignored: boolean;
}

/** A rule as the `ignore` package keeps it (the version is pinned by package-lock.json; `checkRuleShape` checks it). */
interface PackageRule {
  negative: boolean;
  /** The pattern without `!`, trailing spaces trimmed, a leading `\!` / `\#` unescaped. */
  body: string;
  /** Tests a path relative to the rules file's folder, `/`-terminated for a folder. */
  regex: RegExp;
  /** True when the pattern names the last segment only: tested on it alone. */
  _basenameOnly: boolean;
}

/** Throws unless `ig` keeps its rules as `PackageRule`s (a bundled `ignore` of another shape). */
export function checkRuleShape(ig: Ignore): void {
  const rules = (ig as unknown as { _rules?: { _rules?: unknown } })._rules?._rules;
  const rule = Array.isArray(rules) ? (rules[0] as Partial<PackageRule> | undefined) : undefined;
  if (!rule || typeof rule.body !== "string" || typeof rule.negative !== "boolean" || !(rule.regex instanceof RegExp) || typeof rule._basenameOnly !== "boolean") {
    throw new Error("the bundled 'ignore' module does not keep its rules as gitignore-rules.ts reads them");
  }
}

/** A pattern's characters that are not plain: wildcards, classes, escapes. */
const SPECIAL = /[*?[\\]/;

/** Highest index for each key; a later rule with the same key replaces an earlier one. */
function setMax(map: Map<string, number>, key: string, index: number): void {
  if ((map.get(key) ?? -1) < index) map.set(key, index);
}

/** What the package makes of `**` between two segments: any number of segments, then a slash. */
const GAP = "(?:\\/[^\\/]+)*\\/";

/**
 * `re` (a rule's expression) without its backtracking across `**`: between two gaps the pattern
 * matches a fixed number of whole segments, and the leftmost place it fits is as good as any
 * later one (the gap after it takes whatever lies between), so each such piece is matched once,
 * at its leftmost place, and never retried (a lookahead holding a capture, then the capture: an
 * atomic group). Otherwise a pattern of `a` segments and eight `**` gaps, against a path of 40
 * `a` segments, tries every way to spread them over the gaps: seconds for one path. The expressions the
 * package makes hold no capture of their own, so the captures here are numbered from 1.
 */
export function withoutGapBacktracking(re: RegExp): RegExp {
  const pieces = re.source.split(GAP);
  if (pieces.length < 3) return re;
  let source = pieces[0];
  for (let i = 1; i < pieces.length - 1; i++) source += `(?=((?:\\/[^\\/]+)*?\\/${pieces[i]}(?=\\/)))\\${i}`;
  return new RegExp(`${source}${GAP}${pieces[pieces.length - 1]}`, re.flags);
}

/**
 * Where the class opening at `body[start]` (a `[`) ends: the index of its `]` (its first member,
 * even a `]`, is not the end), or -1 where the end is less plain (none, an escape or a `[:name:]`
 * inside): then nothing from the class on may be read as required of a path.
 */
function plainClassEnd(body: string, start: number): number {
  const first = body[start + 1] === "!" || body[start + 1] === "^" ? start + 2 : start + 1;
  const end = body.indexOf("]", first + 1);
  return end < 0 || /[[\\]/.test(body.slice(start + 1, end)) ? -1 : end;
}

/**
 * What any path a rule's pattern `body` matches must contain: `run`, the longest run of plain
 * characters (or ""), and `mask`, the characters it names outside wildcards, classes and
 * escapes as a set of 32 buckets (`charMask`): a string lacking one of them cannot match,
 * whatever the wildcards. An escaped character is taken by neither.
 */
function requiredOf(body: string): { run: string; mask: number } {
  let best = "";
  let run = "";
  let mask = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "[") {
      const end = plainClassEnd(body, i);
      if (end < 0) break;
      i = end;
      run = "";
    } else if (c === "\\" || c === "*" || c === "?" || c === "/") {
      if (c === "\\") i++;
      run = "";
    } else {
      run += c;
      if (run.length > best.length) best = run;
      mask |= 1 << (body.charCodeAt(i) & 31);
    }
  }
  return { run: best, mask };
}

/**
 * What a rule is reckoned to hold of the heap once parsed (`RULE_BYTES`), and what one no map
 * answers for adds once its expressions are compiled and run (`COMPILED_RULE_BYTES` plus
 * `COMPILED_BYTES_PER_CHAR` a character of its pattern; a rule across `**` gaps holds two). They
 * are upper estimates (bench/README.md, "Search with hostile .gitignore files: memory"), used by
 * the walk's budget (gitignore.ts), reckoned before any rule is compiled: a rule that is never
 * tested costs less than this, never more.
 */
const RULE_BYTES = 256;
const COMPILED_RULE_BYTES = 3072;
const COMPILED_BYTES_PER_CHAR = 32;

/** The buckets of the characters of `text` (see `requiredOf`). */
function charMask(text: string): number {
  let mask = 0;
  for (let i = 0; i < text.length; i++) mask |= 1 << (text.charCodeAt(i) & 31);
  return mask;
}

/**
 * The map that answers for a rule of pattern `body`, and its key there: a plain name (`name`),
 * `*X` (`suffix`, by X), `X*` (`prefix`, by X), a plain path anchored by a slash (`path`), each
 * folders only (`dir`) when it ends with `/`; undefined for a rule tested by its own expression.
 */
function shapeOf(body: string): { kind: "name" | "suffix" | "prefix" | "path"; dir: boolean; key: string } | undefined {
  const dir = body.endsWith("/");
  const bare = dir ? body.slice(0, -1) : body;
  if (bare !== "" && !bare.includes("/") && !SPECIAL.test(bare)) return { kind: "name", dir, key: bare };
  const last = bare.length - 1;
  if (bare.length > 1 && bare[0] === "*" && !bare.includes("/") && !SPECIAL.test(bare.slice(1))) return { kind: "suffix", dir, key: bare.slice(1) };
  if (bare.length > 1 && bare[last] === "*" && !bare.includes("/") && !SPECIAL.test(bare.slice(0, last))) return { kind: "prefix", dir, key: bare.slice(0, last) };
  const whole = bare.startsWith("/") ? bare.slice(1) : bare;
  // A slash at the start or in the middle anchors the pattern to this folder: the whole path.
  if (bare.includes("/") && whole !== "" && !SPECIAL.test(whole) && !whole.includes("//") && !whole.startsWith("/")) return { kind: "path", dir, key: whole };
  return undefined;
}

/** What a rule of pattern `body` is reckoned to hold of the heap (the estimates above). */
export function reckonedBytes(body: string): number {
  return RULE_BYTES + (shapeOf(body) ? 0 : COMPILED_RULE_BYTES + COMPILED_BYTES_PER_CHAR * body.length);
}

/** An upper bound of what the rules of `.gitignore` text `text` are reckoned to hold: one rule a line at most, each with an expression, every character in one. */
export function reckonedAtMost(text: string): number {
  let lines = 1;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines++;
  return lines * (RULE_BYTES + COMPILED_RULE_BYTES) + COMPILED_BYTES_PER_CHAR * text.length;
}

/** `lengths` (ascending) with `n` in it. */
function withLength(lengths: number[], n: number): number[] {
  return lengths.includes(n) ? lengths : [...lengths, n].sort((a, b) => a - b);
}

/**
 * The rules of one `.gitignore`, indexed for `verdict`. Rules are added as the package parses
 * them (`addFrom`, a file may be parsed in slices); every structure keeps its indices ascending
 * and is read from the highest down.
 */
export class RulesIndex {
  private heap = 0;
  private rules: PackageRule[] = [];
  /** How many of `rules` are placed (the package's array grows as it parses). */
  private placed = 0;
  /** `name` (file or folder) and `name/` (folder only), by the last segment. */
  private readonly names = new Map<string, number>();
  private readonly dirNames = new Map<string, number>();
  /** `*X` and `*X/`, by X, a suffix of the last segment. */
  private readonly suffixes = new Map<string, number>();
  private readonly dirSuffixes = new Map<string, number>();
  /** `X*` and `X*` + `/`, by X, a prefix of the last segment. */
  private readonly prefixes = new Map<string, number>();
  private readonly dirPrefixes = new Map<string, number>();
  /** `/a/b`, `a/b/`: the whole path relative to the rules file's folder. */
  private readonly paths = new Map<string, number>();
  private readonly dirPaths = new Map<string, number>();
  private suffixLengths: number[] = [];
  private prefixLengths: number[] = [];
  /** Other rules, by the first three characters of their required run (three or more long). */
  private readonly byTrigram = new Map<string, number[]>();
  /** Other rules whose required run is shorter than three: tested whenever their turn comes. */
  private readonly always: number[] = [];
  /** Each rule's required run (other rules only). */
  private readonly runs: string[] = [];
  /** Each other rule's required characters (`requiredOf`), and whether it is tested on the last segment alone. */
  private readonly masks: number[] = [];
  private readonly baseOnly: boolean[] = [];
  /** Each other rule's expression, as `withoutGapBacktracking` makes it, once it is first needed. */
  private readonly regexes: RegExp[] = [];
  /** `seen[i] === stamp` once rule i is a candidate of the current path. */
  private seen = new Int32Array(0);
  private stamp = 0;

  /** The index of `ig`'s rules, all placed at once (`addFrom`). */
  constructor(ig?: Ignore) {
    if (ig) this.addFrom(ig);
  }

  /** The heap this file's rules may hold, every expression compiled (the estimates above). */
  get heapBytes(): number {
    return this.heap;
  }

  /** Places the rules `ig` (the same instance at every call) holds past those placed already. */
  addFrom(ig: Ignore): void {
    const rules = (ig as unknown as { _rules: { _rules: PackageRule[] } })._rules._rules;
    for (let index = this.placed; index < rules.length; index++) {
      const body = rules[index].body;
      this.place(body, index);
      this.heap += reckonedBytes(body);
    }
    this.rules = rules;
    this.placed = rules.length;
    if (this.seen.length < rules.length) this.seen = new Int32Array(rules.length);
  }

  /** Files rule `index` (pattern `body`) in the structure that answers for it; true when that is its own expression (no map). */
  private place(body: string, index: number): boolean {
    const shape = shapeOf(body);
    if (shape) {
      const { kind, dir, key } = shape;
      if (kind === "suffix") this.suffixLengths = withLength(this.suffixLengths, key.length);
      if (kind === "prefix") this.prefixLengths = withLength(this.prefixLengths, key.length);
      const maps = { name: [this.names, this.dirNames], suffix: [this.suffixes, this.dirSuffixes], prefix: [this.prefixes, this.dirPrefixes], path: [this.paths, this.dirPaths] } as const;
      setMax(maps[kind][dir ? 1 : 0], key, index);
      return false;
    }
    const { run, mask } = requiredOf(body);
    this.runs[index] = run;
    this.masks[index] = mask;
    const slash = body.indexOf("/");
    this.baseOnly[index] = slash < 0 || slash === body.length - 1; // the package's own test for `_basenameOnly`
    if (run.length >= 3) {
      const key = run.slice(0, 3);
      const list = this.byTrigram.get(key);
      if (list) list.push(index);
      else this.byTrigram.set(key, [index]);
    } else this.always.push(index);
    return true;
  }

  /**
   * What this file says of `rel` itself (relative to its folder, `/`-terminated for a folder):
   * its last rule matching `rel`, never a folder above. (`Ignore.test` also answers "ignored"
   * when a folder above `rel` is ignored by the same file, which is wrong once a deeper file has
   * re-included that folder: `/.gitignore: a/b`, `a/.gitignore: !b` keeps `a/b/f`, as git and
   * ripgrep do. Folders above are decided once, by every file together, in
   * `GitignoreFilter.isIgnored`.)
   */
  verdict(rel: string): Verdict {
    const isDir = rel.endsWith("/");
    const bare = isDir ? rel.slice(0, -1) : rel;
    const base = bare.slice(bare.lastIndexOf("/") + 1);
    let best = Math.max(this.names.get(base) ?? -1, this.paths.get(bare) ?? -1);
    if (isDir) best = Math.max(best, this.dirNames.get(base) ?? -1, this.dirPaths.get(bare) ?? -1);
    for (const n of this.suffixLengths) {
      if (n > base.length) break;
      const tail = base.slice(base.length - n);
      best = Math.max(best, this.suffixes.get(tail) ?? -1, isDir ? (this.dirSuffixes.get(tail) ?? -1) : -1);
    }
    for (const n of this.prefixLengths) {
      if (n > base.length) break;
      const head = base.slice(0, n);
      best = Math.max(best, this.prefixes.get(head) ?? -1, isDir ? (this.dirPrefixes.get(head) ?? -1) : -1);
    }
    const baseTested = isDir ? `${base}/` : base;
    best = Math.max(best, this.otherMatch(rel, baseTested, charMask(rel), charMask(baseTested), best));
    if (best < 0) return { ignored: false, unignored: false };
    const negative = this.rules[best].negative;
    return { ignored: !negative, unignored: negative };
  }

  /** The highest index above `above` among the other rules that match, or -1; `relMask` and `baseMask` are `charMask` of `rel` and `base`. */
  private otherMatch(rel: string, base: string, relMask: number, baseMask: number, above: number): number {
    if (this.byTrigram.size === 0) return this.firstMatch(this.always, rel, base, relMask, baseMask, above);
    const stamp = ++this.stamp;
    const candidates: number[] = [];
    for (let i = 0; i + 3 <= rel.length; i++) {
      const list = this.byTrigram.get(rel.slice(i, i + 3));
      if (!list) continue;
      for (let k = list.length - 1; k >= 0; k--) {
        const index = list[k];
        if (index <= above) break;
        if (this.seen[index] === stamp) continue;
        this.seen[index] = stamp;
        if (rel.includes(this.runs[index])) candidates.push(index);
      }
    }
    if (candidates.length === 0) return this.firstMatch(this.always, rel, base, relMask, baseMask, above);
    for (const index of this.always) if (index > above) candidates.push(index);
    candidates.sort((a, b) => a - b);
    return this.firstMatch(candidates, rel, base, relMask, baseMask, above);
  }

  /** Rule `index`'s expression (one no map answers for), made on first use. */
  private expression(index: number): RegExp {
    return (this.regexes[index] ??= withoutGapBacktracking(this.rules[index].regex));
  }

  /** How many rules are tested on every path (`compileFrom`). */
  get alwaysCount(): number {
    return this.always.length;
  }

  /**
   * Makes and compiles (one run on "") the expressions of the rules tested on every path (no
   * plain run of three characters to index them by), from the `from`th of them on, while
   * `more()` answers true; returns where it stopped (`alwaysCount` when all are made). Else the
   * first path would pay for every one of them in a single `verdict`, which the caller cannot
   * slice: a walk makes them in slices beforehand. The rules indexed by their run are made when a
   * path first holds it, as most are never needed.
   */
  compileFrom(from: number, more: () => boolean): number {
    let k = from;
    for (; k < this.always.length && more(); k++) this.expression(this.always[k]).test("");
    return k;
  }

  /**
   * The highest index of `indices` (ascending) above `above` whose rule matches, or -1. A rule
   * naming a character the string it is tested on lacks is passed over without its expression.
   */
  private firstMatch(indices: number[], rel: string, base: string, relMask: number, baseMask: number, above: number): number {
    for (let k = indices.length - 1; k >= 0; k--) {
      const index = indices[k];
      if (index <= above) return -1;
      const mask = this.masks[index];
      if ((mask & (this.baseOnly[index] ? baseMask : relMask)) !== mask) continue;
      const rule = this.rules[index];
      if (this.expression(index).test(rule._basenameOnly ? base : rel)) return index;
    }
    return -1;
  }
}
