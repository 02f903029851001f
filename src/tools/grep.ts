/**
 * `grep {pattern, path?}`: an RE2 regular expression over the text files of a folder or one
 * file, `.gitignore` respected, binary and oversized files skipped, results capped.
 *
 * Two engines give the same output: ripgrep when the machine has it (search/ripgrep-grep.ts),
 * else the built-in walk and re2js matcher (search/builtin.ts). Either way the files are opened
 * here, race-free and in path order (search/files.ts), and every line shown is read from those
 * descriptors.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { isConfined, isInside, resolveInWorkspace } from "./workspace.js";
import { GitignoreFilter, unappliedNote, walkFiles } from "./gitignore.js";
import { loopTurns } from "./gitignore-read.js";
import { ToolError, textOutput, type Tool } from "./types.js";
import { GREP_MAX_FILE_BYTES, linesAt, openNamed, readBytes, readCandidate, readMatchedLines, splitLines, type MatchedLines, type OpenCandidate } from "./search/files.js";
import { GREP_MAX_PATTERN_CHARS, compileRe2, parseGrepPattern, type CompiledRe2, type GrepPattern } from "./search/pattern.js";
import { findRipgrep } from "./search/ripgrep.js";
import { comparePaths } from "./search/order.js";
import { ripgrepMatches, ripgrepSearch } from "./search/ripgrep-grep.js";
import { ShownPathCheck } from "./search/verify.js";
import { haveDescriptorPaths } from "./descriptor-paths.js";
import { checkNameOnDisk } from "./name-on-disk.js";
import { UndecodableEntries, isUndecodable } from "./raw-names.js";

export { GREP_BINARY_SNIFF_BYTES, GREP_MAX_FILE_BYTES } from "./search/files.js";
export { GREP_MAX_PATTERN_CHARS } from "./search/pattern.js";

/** Matching lines returned at most; the search stops there. */
export const GREP_MAX_MATCHES = 500;
/** Characters of a matching line shown; the rest is cut with a marker. */
export const GREP_MAX_LINE_CHARS = 300;

/** How many searches each engine ran (tests check which engine a search took). */
export const grepEngineRuns = { ripgrep: 0, builtin: 0 };

function toPosix(p: string): string {
  return path.sep === "/" ? p : p.split(path.sep).join("/");
}

function cutLine(line: string): string {
  return line.length > GREP_MAX_LINE_CHARS ? `${line.slice(0, GREP_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]` : line;
}

/**
 * Where ripgrep runs for a folder search so that the `.gitignore` files between the workspace and
 * the folder apply: none → in the folder; one → in its folder, with it as `--ignore-file`; more
 * → `undefined` (ripgrep cannot anchor two such files; the built-in walk runs).
 */
async function ripgrepPlace(rulesRoot: string, target: string): Promise<{ cwd: string; root: string; ignoreFile?: string } | undefined> {
  const above: string[] = [];
  for (let dir = target; dir !== rulesRoot && isInside(rulesRoot, dir); ) {
    dir = path.dirname(dir);
    const file = path.join(dir, ".gitignore");
    const st = await fs.lstat(file).catch(() => undefined);
    if (st?.isFile()) above.push(dir);
  }
  if (above.length === 0) return { cwd: target, root: "" };
  if (above.length > 1) return undefined;
  return { cwd: above[0], root: path.relative(above[0], target), ignoreFile: path.join(above[0], ".gitignore") };
}

interface Found {
  out: string[];
  capped: boolean;
  /** The file in which the cap was reached. */
  stoppedAt?: string;
  skippedLarge: number;
  binary: boolean;
  /** Files with matching lines whose names are not valid UTF-8: not shown (no file tool could open them), named in a note. */
  undecodable: UndecodableEntries;
}

/** Adds a file's matching lines (read race-free, search/files.ts) to `found`; returns whether to go on. */
function addLines(found: Found, shown: string, opened: MatchedLines): boolean {
  if (opened.kind === "large") found.skippedLarge++;
  if (opened.kind === "binary") found.binary = true;
  if (opened.kind !== "text") return true;
  if (isUndecodable(shown)) {
    if (opened.lines.length > 0) found.undecodable.add(shown);
    return true;
  }
  for (const [n, line] of opened.lines) {
    if (found.out.length >= GREP_MAX_MATCHES) {
      found.capped = true;
      found.stoppedAt = shown;
      return false;
    }
    found.out.push(`${shown}:${n}:${cutLine(line)}`);
  }
  return true;
}

/** Files opened ahead while ripgrep goes on (in order; each holds only the lines it shows). */
const READ_AHEAD_FILES = 8;

let matchingLinesOf: ((lines: string[], re: CompiledRe2, max: number) => number[]) | undefined;

export const grepTool: Tool = {
  name: "grep",
  readOnly: true,
  description:
    "Search the text files of the workspace with a regular expression in RE2 syntax (e.g. `function\\s+main`, " +
    "or `/todo/i` for case-insensitive); no backreferences or lookaround; `\\d`, `\\w`, `\\s` and `\\b` are ASCII. " +
    "Each line is matched on its own. path is a folder or file relative to the workspace (default: the whole workspace). " +
    "Returns matching lines as `path:line:text` (line numbers 1-based), in path order. " +
    "Files ignored by .gitignore, the .git folder, binary files and files over " +
    `${GREP_MAX_FILE_BYTES / (1024 * 1024)} MiB are skipped. At most ${GREP_MAX_MATCHES} matches; ` +
    `lines are cut at ${GREP_MAX_LINE_CHARS} characters.`,
  parameters: {
    type: "object",
    properties: {
      pattern: {
        type: "string",
        description: "RE2 regular expression, matched against each line; `/source/i` form for case-insensitive",
      },
      path: { type: "string", description: "Folder or file to search, relative to the workspace (default: the workspace root)" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    const pattern = args.pattern;
    if (typeof pattern !== "string" || pattern.length === 0) {
      throw new ToolError("pattern is required and must be a non-empty string (a regular expression, RE2 syntax)");
    }
    if (pattern.length > GREP_MAX_PATTERN_CHARS) throw new ToolError(`pattern is longer than ${GREP_MAX_PATTERN_CHARS} characters`);
    if (args.path !== undefined && args.path !== null && typeof args.path !== "string") {
      throw new ToolError(`path must be a string (got ${JSON.stringify(args.path)})`);
    }
    const requested = typeof args.path === "string" && args.path.length > 0 ? args.path : ".";
    const parsed: GrepPattern = parseGrepPattern(pattern);
    const re = await compileRe2(parsed, pattern); // validates the pattern for both engines alike
    const workspace = path.resolve(ctx.workspace);
    const confined = isConfined(ctx.permissionMode);
    await checkNameOnDisk(workspace, requested, ctx.permissionMode, "search");
    const target = resolveInWorkspace(workspace, requested, ctx.permissionMode);

    let stat;
    try {
      stat = await fs.stat(target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new ToolError(`no such file or folder: ${requested}`);
      throw new ToolError(`cannot search ${requested}: ${(err as Error).message}`);
    }
    const insideWs = isInside(workspace, target);
    const display = (abs: string): string => (insideWs ? toPosix(path.relative(workspace, abs)) || "." : abs);
    const single = !stat.isDirectory();
    if (single && !stat.isFile()) throw new ToolError(`${requested} is neither a regular file nor a folder`);

    const found: Found = { out: [], capped: false, skippedLarge: 0, binary: false, undecodable: new UndecodableEntries() };
    const rules = new GitignoreFilter(insideWs ? workspace : target, confined);
    const wanted = () => GREP_MAX_MATCHES + 1 - found.out.length;
    let rg = parsed.rust !== null ? await findRipgrep() : undefined;
    const named = openNamed(ctx.workspace, ctx.permissionMode);
    // The files of a folder search are names a walk listed: confined, each is opened by its name
    // inside its folder's held and verified descriptor, each folder opened once per search.
    const check = confined && !single && (await haveDescriptorPaths()) ? new ShownPathCheck(workspace) : undefined;
    const listed: OpenCandidate = check ? (abs) => check.openShownFile(abs) : named;
    let done = false;
    try {
      // A folder that .gitignore ignores holds nothing to search (an ignored file named by path is searched).
      if (!single) await rules.prepare(path.dirname(target), ctx.signal);
      done = !single && rules.isIgnored(target, true);
      if (done) {
        // nothing to search
      } else if (rg && single) {
        // ripgrep searches the bytes read here, through its stdin; its lines are taken from them as a folder search's are from each file.
        const cand = await readCandidate(named, target);
        const opened: MatchedLines =
          cand.kind === "text"
            ? { kind: "text", lines: await linesAt(readBytes(cand.bytes), cand.bytes.length, await ripgrepMatches({ rg, pattern: parsed.rust!, input: cand.bytes, maxPerFile: wanted(), signal: ctx.signal })) }
            : cand;
        addLines(found, toPosix(requested), opened);
        done = true;
      } else if (rg) {
        const place = await ripgrepPlace(insideWs ? workspace : target, target);
        const ahead: { shown: string; count: number; opened: Promise<MatchedLines> }[] = [];
        let aheadLines = 0;
        const next = async (): Promise<boolean> => {
          const item = ahead.shift()!;
          aheadLines -= item.count;
          return addLines(found, item.shown, await item.opened);
        };
        const run = place
          ? await ripgrepSearch({
              rg,
              pattern: parsed.rust!,
              ...place,
              follow: !confined,
              maxPerFile: GREP_MAX_MATCHES + 1,
              signal: ctx.signal,
              onFile: (abs, all) => {
                // Lines past the cap are never shown: they are not read.
                const matches = all.slice(0, Math.max(1, wanted() - aheadLines));
                const opened = readMatchedLines(listed, abs, matches);
                opened.catch(() => undefined);
                ahead.push({ shown: display(abs), count: matches.length, opened });
                aheadLines += matches.length;
                // Opened ahead are at most READ_AHEAD_FILES, and none past the files whose lines (as
                // ripgrep numbered them) already reach the cap: ripgrep waits meanwhile.
                const full = () => ahead.length >= READ_AHEAD_FILES || (ahead.length > 0 && aheadLines >= wanted());
                if (!full()) return true; // ripgrep's records go on being taken synchronously
                return (async () => {
                  while (full()) if (!(await next())) return false;
                  return true;
                })();
              },
            }).finally(() => Promise.allSettled(ahead.map((a) => a.opened)))
          : undefined;
        while (run && ahead.length > 0 && !found.capped) await next();
        if (run) {
          // Files ripgrep skipped for their size count as the built-in walk counts them: those
          // before the point where the cap stopped the search.
          const stopAt = found.stoppedAt;
          found.skippedLarge += run.large.map(display).filter((p) => stopAt === undefined || comparePaths(p, stopAt) < 0).length;
          done = true;
        } else {
          // The built-in engine starts afresh: drop what ripgrep's run had found before it stopped.
          rg = undefined;
          Object.assign(found, { out: [], capped: false, skippedLarge: 0, binary: false, stoppedAt: undefined, undecodable: new UndecodableEntries() });
        }
      }
      if (!done) {
        const files = single
          ? [target]
          : (await walkFiles({ root: target, filter: rules, signal: ctx.signal, follow: !confined })).map((f) => path.join(target, f));
        matchingLinesOf ??= (await import("./search/builtin.js")).matchingLines;
        const match = matchingLinesOf;
        // re2js runs on this thread: other sessions and a cancel get their turns between files.
        const turn = loopTurns(ctx.signal);
        for (const abs of files) {
          ctx.signal.throwIfAborted();
          const cand = await readCandidate(single ? named : listed, abs);
          let opened: MatchedLines;
          if (cand.kind === "text") {
            const lines = splitLines(cand.bytes.toString("utf8"));
            opened = { kind: "text", lines: match(lines, re, wanted()).map((i) => [i + 1, lines[i]]) };
          } else opened = cand;
          if (!addLines(found, single ? toPosix(requested) : display(abs), opened)) break;
          await turn();
        }
      }
    } finally {
      rules.close();
      await check?.close();
    }
    grepEngineRuns[rg ? "ripgrep" : "builtin"]++;

    const engine = rg ? "ripgrep" : "the built-in search";
    const notes: string[] = [];
    if (found.capped) notes.push(`[stopped after ${GREP_MAX_MATCHES} matches; there are more — narrow the pattern or the path]`);
    if (found.skippedLarge > 0) notes.push(`[skipped ${found.skippedLarge} file(s) over ${GREP_MAX_FILE_BYTES} bytes]`);
    if (single && found.binary) notes.push(`[${requested} is a binary file; not searched]`);
    const unapplied = rg ? undefined : unappliedNote(rules); // ripgrep applies every .gitignore
    if (unapplied) notes.push(unapplied);
    const undecodable = found.undecodable.note("holding matches");
    if (undecodable) notes.push(undecodable);
    if (found.out.length === 0) {
      const where = single ? requested : `${requested} (searched with ${engine}; .gitignore'd and binary files skipped)`;
      return textOutput([`No matches for ${parsed.display} in ${where}.`, ...notes].join("\n"));
    }
    return textOutput([...found.out, ...notes].join("\n"));
  },
};
