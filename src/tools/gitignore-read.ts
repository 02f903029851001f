/**
 * One `.gitignore` file read and parsed for the built-in walk (gitignore.ts): read without
 * blocking, at most `GITIGNORE_MAX_BYTES`, and parsed by the `ignore` package in slices of lines,
 * the event loop given a turn between them, its rules reckoned against the walk's budget as they
 * come (gitignore-budget.ts), so that neither a large file nor one past the budget holds the loop.
 *
 * @module
 */
import * as fs from "node:fs";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { Ignore, Options as IgnoreOptions } from "ignore";
import { collapseGlobstars } from "./gitignore-globstar.js";
import { checkRuleShape, reckonedAtMost, reckonedBytes, RulesIndex } from "./gitignore-rules.js";
import { rethrowIfOutOfDescriptors } from "./out-of-descriptors.js";
import { loadPackages } from "./packages-loader.js";

type IgnoreFactory = (options?: IgnoreOptions) => Ignore;
/** `ignore` is loaded on first use, not at bridge start-up. */
let ignoreFactory: IgnoreFactory | undefined;

export async function loadIgnore(): Promise<IgnoreFactory> {
  if (!ignoreFactory) {
    const factory = (await loadPackages()).ignore as unknown as IgnoreFactory;
    checkRuleShape(factory().add("x"));
    ignoreFactory = factory;
  }
  return ignoreFactory;
}

/** The longest the walk filters a folder's entries, or parses a `.gitignore`, before it yields to the event loop. */
export const FILTER_SLICE_MS = 10;

/** The event loop's share of a long piece of work: slices of at most `FILTER_SLICE_MS`, then a turn of the loop. */
class LoopSlices {
  private start = performance.now();
  constructor(private readonly signal: AbortSignal) {}

  /** Whether the current slice still lasts. */
  readonly lasts = (): boolean => performance.now() - this.start <= FILTER_SLICE_MS;

  /** `undefined` while the slice lasts, else a promise of the loop's next turn, which rejects once `signal` is aborted. */
  readonly turn = (): Promise<void> | undefined =>
    this.lasts()
      ? undefined
      : yieldToLoop().then(() => {
          this.signal.throwIfAborted();
          this.start = performance.now();
        });
}

/**
 * A turn of the event loop once every `FILTER_SLICE_MS` of work: call the result after each step;
 * it answers `undefined` while the slice lasts, else a promise of the next turn that rejects once
 * `signal` is aborted.
 */
export const loopTurns = (signal: AbortSignal): (() => Promise<void> | undefined) => new LoopSlices(signal).turn;

/** The characters of `.gitignore` text parsed between two looks at the clock (a few milliseconds of parsing). */
const PARSE_SLICE_CHARS = 4096;

/**
 * Where the slice of `text` that starts at `from` ends: after the first line end past
 * `PARSE_SLICE_CHARS`, or at the end. The package reads each slice's lines as it reads the
 * whole text's, but for a byte-order mark opening a slice (it drops one opening the text), so a
 * slice never starts with one.
 */
function sliceEnd(text: string, from: number): number {
  let end = from + PARSE_SLICE_CHARS;
  for (;;) {
    end = text.indexOf("\n", end);
    if (end < 0) return text.length;
    end++;
    if (text.charCodeAt(end) !== 0xfeff) return end;
  }
}

/**
 * Largest `.gitignore` applied (~100,000 rules, held for the walk's length). No count of rules is
 * capped, as neither git nor ripgrep caps it: the rules index makes the forms a generated list
 * holds cost a path a few lookups. A larger file is not applied, and the result of the call says
 * so (`unappliedNote`), since files git would hide may then be listed.
 */
export const GITIGNORE_MAX_BYTES = 1024 * 1024;

/**
 * The text of a `.gitignore`, `undefined` when there is none to use, `null` when it is a regular
 * file over `GITIGNORE_MAX_BYTES`. It is read on the main thread, so it must never block: opened
 * non-blocking and without following a link (git does not follow a linked `.gitignore` either),
 * and used only when it is a regular file of bounded size — a FIFO, a device or a link to one is
 * skipped.
 */
export function readIgnoreFile(file: string | Buffer): string | null | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW | fs.constants.O_NOCTTY);
  } catch (err) {
    rethrowIfOutOfDescriptors(err); // else rules that exist would go unapplied
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return undefined;
    if (st.size > GITIGNORE_MAX_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < buf.length) {
      const got = fs.readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return collapseGlobstars(buf.subarray(0, n).toString("utf8"));
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A lower bound of what the rules of the lines `lines` are reckoned to hold (`reckonedBytes`),
 * without the package's parse (most of a parse's cost is the package making each rule's
 * expression source): a line holding no backslash, no CR but the one before its end and no
 * byte-order mark is one rule for the package whenever it is not blank or a comment, its pattern
 * the line without a leading `!` and trailing spaces. Other lines are not counted.
 */
export function reckonedAtLeast(lines: string): number {
  let bytes = 0;
  for (let line of lines.split("\n")) {
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line === "" || line[0] === "#" || /[\\\r\uFEFF]/.test(line)) continue;
    let end = line.length;
    while (end > 0 && line[end - 1] === " ") end--;
    const body = line.slice(line[0] === "!" ? 1 : 0, end);
    if (body !== "") bytes += reckonedBytes(body);
  }
  return bytes;
}

/** What a walk's rules may hold of the heap (gitignore-budget.ts `WalkRulesBudget`). */
interface Budget {
  fits(bytes: number): boolean;
  take(bytes: number): boolean;
}

/**
 * The rules of `.gitignore` text `text`, parsed in slices, taken from `budget`, the expressions
 * of those tested on every path made in slices too (`RulesIndex.compileFrom`); or null as soon as their reckoning
 * (`reckonedAtLeast` before the parse, `RulesIndex.heapBytes` during it) does not fit: the rest of
 * a file past the budget is not parsed, and none of its expressions is made. The event loop is given a turn every `FILTER_SLICE_MS`;
 * rejects with the signal's reason once aborted.
 */
export async function parseRules(text: string, budget: Budget, signal: AbortSignal): Promise<RulesIndex | null> {
  const ig = (await loadIgnore())({ ignorecase: false }); // case-sensitive, as git on Linux and ripgrep
  const index = new RulesIndex();
  const slices = new LoopSlices(signal);
  const giveTurn = async () => {
    signal.throwIfAborted();
    await slices.turn();
  };
  // A file that may be past the budget is told first by a cheap scan, then by the parse itself.
  let reckoned = 0;
  for (let from = budget.fits(reckonedAtMost(text)) ? text.length : 0; from < text.length; ) {
    const to = sliceEnd(text, from);
    reckoned += reckonedAtLeast(text.slice(from, to));
    from = to;
    if (!budget.fits(reckoned)) return null;
    await giveTurn();
  }
  for (let from = 0; from < text.length; ) {
    const to = sliceEnd(text, from);
    ig.add(text.slice(from, to));
    index.addFrom(ig);
    from = to;
    if (!budget.fits(index.heapBytes)) return null;
    await giveTurn();
  }
  if (!budget.take(index.heapBytes)) return null;
  for (let made = 0; made < index.alwaysCount; ) {
    made = index.compileFrom(made, slices.lasts);
    await giveTurn();
  }
  return index;
}
