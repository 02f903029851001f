/**
 * `.gitignore`-aware listing of workspace files, shared by `glob` and `grep`.
 *
 * The walk is this module's own (`walkFiles`), or tinyglobby's for a pattern reaching outside
 * (`listFiles`, through a file-system adapter whose `readdir` drops ignored entries); either way
 * ignored folders (`node_modules/`, `build/`) are never entered at all. Both run on the bridge's
 * one event loop, so neither holds it: a folder's rules files are read and parsed before its
 * entries are judged (`prepare`, gitignore-read.ts, in slices), and its entries are judged in
 * slices (`filterEntriesInSlices`), the loop and a cancel given a turn between them. Rules come
 * from every `.gitignore` between the walk root and the entry
 * (nested files override their parents, `!negation` included), evaluated the way git does:
 * the last matching rule wins, deeper files last. `.git` is always skipped. In a confined
 * permission mode symbolic links are neither followed nor listed (as ripgrep without
 * `--follow`), so nothing outside can be listed or read through one. A folder swapped for a link
 * during the walk can still be read by name: callers verify what they show (glob: the real path
 * of each path shown; grep: `openForRead` on the descriptor).
 *
 * Not handled: `.git/info/exclude` and the user's global excludes file.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { sortPathsInSlices } from "./search/order.js";
import { isInside } from "./workspace.js";
import { isOutOfDescriptors, OutOfDescriptorsError, rethrowIfOutOfDescriptors } from "./out-of-descriptors.js";
import { loadPackages } from "./packages-loader.js";
import { fsPath, readFolder } from "./raw-names.js";
import type { RulesIndex } from "./gitignore-rules.js";
import { GITIGNORE_MAX_BYTES, loadIgnore, loopTurns, parseRules, readIgnoreFile } from "./gitignore-read.js";
export { GITIGNORE_MAX_BYTES };
import { GITIGNORE_ALL_WALKS_HEAP_BYTES, GITIGNORE_WALK_HEAP_BYTES, MiB, WalkRulesBudget } from "./gitignore-budget.js";

/** Folders never listed, whatever `.gitignore` says. */
export const ALWAYS_SKIPPED = new Set([".git"]);

/**
 * A folder under the root, as the filter knows it: whether it is ignored, its path relative to
 * the root with `/` (`""` for the root), and the rules files that apply to its entries, the root's
 * first, each with where its own folder's relative path ends in `rel` (its entries are judged
 * from there on).
 */
interface Folder {
  ignored: boolean;
  rel: string;
  rules: { ig: RulesIndex; from: number }[];
}

/** Answers "is this path ignored?" for paths under one root, caching each folder's rules. */
export class GitignoreFilter {
  /** The `.gitignore` files over `GITIGNORE_MAX_BYTES` met so far, relative to the root with `/`: not applied. */
  readonly unapplied: string[] = [];

  /** The `.gitignore` files whose rules would have taken the walk past `GITIGNORE_WALK_HEAP_BYTES`, or all walks past `GITIGNORE_ALL_WALKS_HEAP_BYTES`: not applied. */
  readonly overBudget: string[] = [];

  /** What the rules applied so far may hold of the heap, within the walk's and all walks' budgets. */
  private readonly budget = new WalkRulesBudget();

  /**
   * Gives this walk's share of `GITIGNORE_ALL_WALKS_HEAP_BYTES` back (idempotent): call when the
   * search ends. The rules themselves are freed with the filter; it applies no further file.
   */
  close(): void {
    this.budget.close();
  }

  /** Set when the tinyglobby adapter could not read a folder for want of descriptors. */
  ranOutOfDescriptors = false;

  /**
   * @param root the folder whose `.gitignore` files apply (the workspace)
   * @param confineSymlinks drop symbolic links (a confined mode): neither followed nor listed
   */
  constructor(
    readonly root: string,
    readonly confineSymlinks: boolean,
  ) {
    this.root = path.resolve(root);
  }

  /**
   * The rules of `dir`'s own `.gitignore`, read once per folder (`prepare` keeps them in its
   * folder), or null without one, or when it is over the size cap or the budget. The text is
   * parsed in slices of lines with the event loop given a turn between them, and each slice's
   * rules are reckoned as they come: a file past the budget is dropped as soon as its reckoning
   * passes it, before the rest is parsed.
   */
  private async rulesOf(dir: string, signal: AbortSignal): Promise<RulesIndex | null> {
    const shown = () => path.relative(this.root, path.join(dir, ".gitignore")).split(path.sep).join("/");
    let text: string | null | undefined;
    try {
      text = readIgnoreFile(fsPath(path.join(dir, ".gitignore")));
    } catch (err) {
      rethrowIfOutOfDescriptors(err);
      return null; // no (readable) .gitignore here
    }
    if (text === null) this.unapplied.push(shown());
    if (text === undefined || text === null) return null;
    const index = await parseRules(text, this.budget, signal);
    if (!index) this.overBudget.push(shown()); // dropped before any of its rules is compiled
    return index;
  }

  /**
   * Whether `absPath` (a file, or a folder when `isDir`) is ignored, as git decides it: ignored
   * when a folder above it is (nothing under an ignored folder can be re-included), else by the
   * last rule matching the path itself, a deeper `.gitignore`'s rules after its parents'. Paths
   * outside the root never are. The folder holding `absPath` must have been made ready by
   * `prepare` (its rules files are read and parsed there, asynchronously).
   */
  isIgnored(absPath: string, isDir: boolean): boolean {
    const abs = path.resolve(absPath);
    if (ALWAYS_SKIPPED.has(path.basename(abs))) return true;
    if (!isInside(this.root, abs) || abs === this.root) return false;
    const folder = this.folders.get(path.dirname(abs));
    if (!folder) throw new Error(`GitignoreFilter.isIgnored before prepare(${JSON.stringify(path.dirname(abs))})`);
    return folder.ignored || this.judged(folder, path.basename(abs), isDir);
  }

  /** Each folder's answer and rules, by absolute path: a walk asks about the same folders for every entry. */
  private readonly folders = new Map<string, Folder>();

  /** The `prepare` under way (they run one after another: a folder's rules are read once, and taken from the budget once). */
  private preparing: Promise<unknown> = Promise.resolve();

  /**
   * Makes folder `dir` ready for `isIgnored` of its entries (nothing to do for a folder known, or
   * outside the root: `undefined`): its answer and rules files, and those of every folder between
   * the root and it. Rejects with the signal's reason when aborted while a rules file is parsed.
   */
  prepare(dir: string, signal: AbortSignal): Promise<void> | undefined {
    const abs = path.resolve(dir);
    if (this.folders.has(abs) || !isInside(this.root, abs)) return undefined;
    const run = this.preparing.then(() => this.makeFolders(abs, signal));
    this.preparing = run.catch(() => undefined);
    return run;
  }

  /**
   * Folder `dir` (the root or below it), made from its parent's: a deep tree costs each entry
   * one test per rules file above it, never a walk up every folder above (quadratic in the
   * depth, per entry). Made from the highest folder not yet known down, without recursion.
   */
  private async makeFolders(dir: string, signal: AbortSignal): Promise<void> {
    const missing: string[] = [];
    let at = dir;
    let above: Folder | undefined;
    while (!(above = this.folders.get(at))) {
      missing.push(at);
      if (at === this.root || at === path.dirname(at)) break;
      at = path.dirname(at);
    }
    for (let i = missing.length - 1; i >= 0; i--) {
      const abs = missing[i];
      let folder: Folder;
      if (!above) {
        const ig = await this.rulesOf(abs, signal);
        folder = { ignored: false, rel: "", rules: ig ? [{ ig, from: 0 }] : [] };
      } else {
        const name = path.basename(abs);
        const rel = above.rel === "" ? name : `${above.rel}/${name}`;
        const ignored = above.ignored || ALWAYS_SKIPPED.has(name) || this.judged(above, name, true);
        // Nothing below an ignored folder is asked about its own rules: they are not read.
        const ig = ignored ? null : await this.rulesOf(abs, signal);
        folder = { ignored, rel, rules: ig ? [...above.rules, { ig, from: rel.length + 1 }] : above.rules };
      }
      this.folders.set(abs, folder);
      above = folder;
    }
  }

  /** Entry `name` of `folder` (not ignored itself), judged by the rules matching it itself in every `.gitignore` above it, deeper files last. */
  private judged(folder: Folder, name: string, isDir: boolean): boolean {
    const rel = (folder.rel === "" ? name : `${folder.rel}/${name}`) + (isDir ? "/" : "");
    let ignored = false;
    for (const { ig, from } of folder.rules) {
      const verdict = ig.verdict(from === 0 ? rel : rel.slice(from));
      if (verdict.ignored) ignored = true;
      else if (verdict.unignored) ignored = false;
    }
    return ignored;
  }

  /** Whether entry `entry` of folder `dir` is neither ignored nor (when confining) a link. */
  private keeps(dir: string, entry: fs.Dirent): boolean {
    const abs = path.join(dir, entry.name);
    if (entry.isSymbolicLink() && this.confineSymlinks) return false;
    let isDir = entry.isDirectory();
    if (entry.isSymbolicLink()) {
      try {
        isDir = fs.statSync(fsPath(abs)).isDirectory();
      } catch {
        isDir = false;
      }
    }
    return !this.isIgnored(abs, isDir);
  }

  /**
   * The entries of folder `dir` that are neither ignored nor (when confining) links, its rules
   * made ready first (`prepare`), judged in slices of at most `FILTER_SLICE_MS`, the event loop
   * (and a cancel) given a turn between them: an entry costs a test for each rule no index holds
   * (gitignore-rules.ts), so a folder of a hostile repository could otherwise hold the loop for
   * seconds.
   */
  async filterEntriesInSlices(dir: string, entries: fs.Dirent[], signal: AbortSignal): Promise<fs.Dirent[]> {
    await this.prepare(dir, signal);
    const kept: fs.Dirent[] = [];
    const turn = loopTurns(signal);
    for (const entry of entries) {
      if (this.keeps(dir, entry)) kept.push(entry);
      const next = turn();
      if (next) await next;
    }
    return kept;
  }

  /**
   * A file-system adapter for tinyglobby (`fs` option, its asynchronous walk) that hides ignored
   * entries, each folder filtered in slices (`filterEntriesInSlices`); a folder read after
   * `signal` is aborted is answered with the abort, which tinyglobby's walk stops on.
   */
  fsAdapter(signal: AbortSignal): { readdir: typeof fs.readdir; readdirSync: typeof fs.readdirSync } {
    const readdir = ((dir: fs.PathLike, options: unknown, callback: (err: NodeJS.ErrnoException | null, entries: fs.Dirent[]) => void) => {
      void options;
      readFolder(String(dir)).then(
        (entries) =>
          this.filterEntriesInSlices(path.resolve(String(dir)), entries, signal).then(
            (kept) => callback(null, kept),
            (e: unknown) => {
              if (e instanceof OutOfDescriptorsError) this.ranOutOfDescriptors = true;
              callback(e as NodeJS.ErrnoException, []);
            },
          ),
        (err: NodeJS.ErrnoException) => {
          // tinyglobby skips a folder it cannot read without a word; listFiles reports this one.
          if (isOutOfDescriptors(err)) this.ranOutOfDescriptors = true;
          callback(err, []);
        },
      );
    }) as unknown as typeof fs.readdir;
    // The synchronous walk (tinyglobby's `globSync`) cannot give the loop a turn: not offered.
    const readdirSync = (() => {
      throw new Error("the .gitignore-filtered walk is asynchronous only");
    }) as unknown as typeof fs.readdirSync;
    return { readdir, readdirSync };
  }
}

/**
 * Every file under `root` that `.gitignore` keeps, relative to `root` with `/`, in walk order
 * (search/order.ts) — the built-in twin of `rg --files`, which lists names that are not valid
 * UTF-8 as their bytes: such names come in the form of raw-names.ts (one-to-one with the bytes,
 * never equal to a valid name), so callers can tell and count them; regular files only; in a confined mode
 * links are neither followed nor listed; `follow` follows them (never back into a folder above). Each folder is
 * read asynchronously and filtered in slices (`filterEntriesInSlices`), so the event loop is never held for long.
 */
export async function walkFiles(options: { root: string; filter: GitignoreFilter; signal: AbortSignal; follow: boolean }): Promise<string[]> {
  options.signal.throwIfAborted();
  await loadIgnore(); // a failure to load the parser fails the call, never reads as folders left unread
  const root = path.resolve(options.root);
  const out: string[] = [];
  const turn = loopTurns(options.signal);
  // Each folder, its path relative to the root with `/`, and the identities of the folders above
  // it: a link back up is not entered again.
  const stack: { dir: string; rel: string; above: string[] }[] = [{ dir: root, rel: "", above: [] }];
  while (stack.length > 0) {
    options.signal.throwIfAborted();
    const { dir, rel, above: aboveDir } = stack.pop()!;
    let above = aboveDir;
    if (options.follow) {
      const st = await fs.promises.stat(fsPath(dir)).catch((err) => void rethrowIfOutOfDescriptors(err));
      const id = st ? `${st.dev}:${st.ino}` : dir;
      if (above.includes(id)) continue;
      above = [...above, id];
    }
    let entries: fs.Dirent[];
    try {
      entries = await readFolder(dir);
    } catch (err) {
      rethrowIfOutOfDescriptors(err);
      continue; // vanished or unreadable
    }
    try {
      entries = await options.filter.filterEntriesInSlices(dir, entries, options.signal);
    } catch (err) {
      options.signal.throwIfAborted();
      rethrowIfOutOfDescriptors(err);
      continue;
    }
    // A folder of many entries is taken in slices too.
    for (const entry of entries) {
      const abs = path.join(dir, entry.name);
      const entryRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      let kind: "dir" | "file" | undefined = entry.isDirectory() ? "dir" : entry.isFile() ? "file" : undefined;
      if (entry.isSymbolicLink() && options.follow) {
        const st = await fs.promises.stat(fsPath(abs)).catch((err) => void rethrowIfOutOfDescriptors(err));
        kind = st?.isDirectory() ? "dir" : st?.isFile() ? "file" : undefined;
      }
      if (kind === "dir") stack.push({ dir: abs, rel: entryRel, above });
      else if (kind === "file") out.push(entryRel);
      const next = turn();
      if (next) await next;
    }
  }
  return sortPathsInSlices(out, turn);
}

/** The note a search's result ends with when `filter` met `.gitignore` files it did not apply, else undefined. */
export function unappliedNote(filter: GitignoreFilter): string | undefined {
  const named = (files: string[]) => files.slice(0, 3).join(", ") + (files.length > 3 ? ` and ${files.length - 3} more` : "");
  const why: string[] = [];
  if (filter.unapplied.length > 0) why.push(`over ${GITIGNORE_MAX_BYTES / MiB} MiB: ${named(filter.unapplied)}`);
  if (filter.overBudget.length > 0) why.push(`past the memory budget of .gitignore rules (${GITIGNORE_WALK_HEAP_BYTES / MiB} MiB a search, ${GITIGNORE_ALL_WALKS_HEAP_BYTES / MiB} MiB all searches at once): ${named(filter.overBudget)}`);
  if (why.length === 0) return undefined;
  return `[not applied, ${why.join("; ")}; files these .gitignore files ignore may be listed]`;
}

/** Whether a glob pattern stays inside its root: relative, and no `..` segment. */
export function patternEscapes(pattern: string): boolean {
  if (path.isAbsolute(pattern) || pattern.startsWith("~")) return true;
  return pattern.split(/[\\/]+/).some((segment) => segment === "..");
}

/**
 * The files matching `patterns` under `cwd`, `.gitignore`-filtered, relative to `cwd` with `/`
 * separators, in walk order (search/order.ts). Rejects with the signal's reason when aborted.
 */
export async function listFiles(options: {
  patterns: string[];
  cwd: string;
  filter: GitignoreFilter;
  signal: AbortSignal;
  followSymlinks: boolean;
}): Promise<string[]> {
  options.signal.throwIfAborted();
  await loadIgnore();
  const { glob } = (await loadPackages()).tinyglobby;
  const files = await glob(options.patterns, {
    cwd: options.cwd,
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: options.followSymlinks,
    expandDirectories: false,
    fs: options.filter.fsAdapter(options.signal),
    signal: options.signal,
  });
  options.signal.throwIfAborted();
  if (options.filter.ranOutOfDescriptors) throw new OutOfDescriptorsError();
  // The walk's starting folder (e.g. `node_modules` for `node_modules/**`) is not filtered by the
  // adapter, so check each result too — in slices, giving the event loop (and a cancel) a turn.
  const cwd = path.resolve(options.cwd);
  const kept: string[] = [];
  const turn = loopTurns(options.signal);
  let preparedDir: string | undefined;
  for (const file of files) {
    const abs = path.resolve(cwd, file);
    const dir = path.dirname(abs);
    if (dir !== preparedDir) {
      const ready = options.filter.prepare(dir, options.signal);
      if (ready) await ready;
      preparedDir = dir;
    }
    if (!options.filter.isIgnored(abs, false)) kept.push(file);
    const next = turn();
    if (next) await next;
  }
  return sortPathsInSlices(kept, turn);
}
