/**
 * `glob {pattern}`: workspace files matching a glob pattern, `.gitignore` respected, sorted, capped.
 *
 * The walk is ripgrep's (`rg --files`, same rules as grep) when the machine has it, else the
 * built-in one (gitignore.ts `walkFiles`); the pattern is matched by picomatch either way, as
 * tinyglobby would (tinyglobby itself walks only a pattern reaching outside, in `full` mode). Each path shown is checked first (search/verify.ts): in a confined mode
 * it must be a regular file in a folder really inside the workspace, so a name listed through a
 * folder swapped for a link is dropped.
 */
import * as path from "node:path";
import { isConfined } from "./workspace.js";
import { GitignoreFilter, listFiles, patternEscapes, unappliedNote, walkFiles } from "./gitignore.js";
import { loopTurns } from "./gitignore-read.js";
import { ToolError, textOutput, type Tool } from "./types.js";
import { ShownPathCheck } from "./search/verify.js";
import { RIPGREP_COMMON_FLAGS, findRipgrep, runRipgrep } from "./search/ripgrep.js";
import { loadPackages } from "./packages-loader.js";
import { UndecodableEntries, isUndecodable, pathOf } from "./raw-names.js";

/** Paths returned at most; the rest is counted and cut. */
export const GLOB_MAX_RESULTS = 1000;
/** Longest pattern accepted. */
export const GLOB_MAX_PATTERN_CHARS = 4096;

/** How many listings each engine ran (tests check which engine a glob took). */
export const globEngineRuns = { ripgrep: 0, builtin: 0 };

type Matcher = (p: string) => boolean;
type Picomatch = (glob: string, options: Record<string, unknown>) => Matcher;

/**
 * The paths shown: the first `GLOB_MAX_RESULTS` matches in walk order that pass the check (in a
 * confined mode), and a count of all. Matches are checked in slices, concurrently; past the
 * limit they are only counted, so memory stays bounded whatever the tree. A match whose name is
 * not valid UTF-8 is never shown (no file tool could open it): it is counted, once checked, in
 * `undecodable`, for the note.
 */
class ShownPaths {
  readonly shown: string[] = [];
  readonly undecodable = new UndecodableEntries();
  private pending: string[] = [];
  private matched = 0;
  private dropped = 0;

  constructor(private readonly check: ShownPathCheck | undefined) {}

  /** Adds a match; resolves once it is safe to add the next. */
  async add(file: string): Promise<void> {
    if (isUndecodable(file)) {
      if (!this.check || (await this.check.isShownFile(file))) this.undecodable.add(file);
      return;
    }
    this.matched++;
    if (this.shown.length + this.pending.length >= GLOB_MAX_RESULTS) return;
    this.pending.push(file);
    if (this.pending.length >= 256 || this.shown.length + this.pending.length >= GLOB_MAX_RESULTS) await this.flush();
  }

  async flush(): Promise<void> {
    const slice = this.pending;
    this.pending = [];
    const ok = this.check ? await Promise.all(slice.map((f) => this.check!.isShownFile(f))) : slice.map(() => true);
    slice.forEach((f, k) => (ok[k] ? this.shown.push(f) : this.dropped++));
  }

  /** Matches not shown, not counting those the check dropped. */
  get more(): number {
    return this.matched - this.dropped - this.shown.length;
  }
}

/** Streams ripgrep's walk (`--sort path`: walk order) into `sink`; `false` when ripgrep failed. */
async function ripgrepFiles(rg: string, cwd: string, follow: boolean, signal: AbortSignal, match: (f: string) => boolean, sink: ShownPaths): Promise<boolean> {
  const args = [...RIPGREP_COMMON_FLAGS, "--files", "--null", "--sort=path", ...(follow ? ["--follow"] : [])];
  const run = await runRipgrep({
    rg,
    args,
    cwd,
    signal,
    separator: 0,
    onRecord: async (rec) => {
      const file = pathOf(rec); // ripgrep prints a name that is not valid UTF-8 as its bytes
      if (match(file)) await sink.add(file);
      return true;
    },
  });
  return !run.abandoned && (run.code === 0 || run.code === 1);
}

export const globTool: Tool = {
  name: "glob",
  readOnly: true,
  description:
    "Find files of the workspace by glob pattern, e.g. `**/*.ts`, `src/**/test_*.py`, `*.{json,yaml}`. " +
    "Patterns are relative to the workspace root (`*.ts` matches only the root folder; use `**/` for any depth). " +
    "Returns matching file paths (files only, not folders), one per line, in path order (a folder's entries by name); dotfiles are included. " +
    "Files ignored by .gitignore and the .git folder are skipped. " +
    `At most ${GLOB_MAX_RESULTS} paths are returned.`,
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "Glob pattern relative to the workspace root, e.g. `src/**/*.ts`" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    const pattern = args.pattern;
    if (typeof pattern !== "string" || pattern.trim() === "") {
      throw new ToolError("pattern is required and must be a non-empty string (a glob such as `**/*.ts`)");
    }
    if (pattern.length > GLOB_MAX_PATTERN_CHARS) throw new ToolError(`pattern is longer than ${GLOB_MAX_PATTERN_CHARS} characters`);
    const confined = isConfined(ctx.permissionMode);
    const escapes = patternEscapes(pattern);
    if (confined && escapes) {
      throw new ToolError(
        `pattern '${pattern}' reaches outside the workspace (absolute, '~' or a '..' segment); ` +
          `permission mode '${ctx.permissionMode}' confines glob to the workspace — use a pattern relative to it`,
      );
    }
    const workspace = path.resolve(ctx.workspace);
    const filter = new GitignoreFilter(workspace, confined);
    const rg = escapes ? undefined : await findRipgrep();
    const check = confined ? new ShownPathCheck(workspace) : undefined;
    let sink = new ShownPaths(check);
    try {
      let listed = false;
      const matcher = async () => {
        const picomatch = ((await loadPackages()).picomatch as unknown as { default: Picomatch }).default;
        let normal = pattern.endsWith("/") ? pattern.slice(0, -1) : pattern;
        normal = path.posix.normalize(normal);
        return picomatch(normal, { dot: true, posix: true });
      };
      if (rg) {
        listed = await ripgrepFiles(rg, workspace, !confined, ctx.signal, await matcher(), sink);
        if (listed) globEngineRuns.ripgrep++;
        else sink = new ShownPaths(check);
      }
      if (!listed) {
        globEngineRuns.builtin++;
        // A pattern reaching outside (full mode only) is tinyglobby's to walk; else the same walk as grep's.
        const files = escapes
          ? await listFiles({ patterns: [pattern], cwd: workspace, filter, signal: ctx.signal, followSymlinks: !confined })
          : await walkFiles({ root: workspace, filter, signal: ctx.signal, follow: !confined });
        const match = escapes ? () => true : await matcher();
        const turn = loopTurns(ctx.signal); // a listing of any size is matched in slices
        for (const file of files) {
          if (match(file)) await sink.add(file);
          const next = turn();
          if (next) await next;
        }
      }
      await sink.flush();
    } finally {
      filter.close();
      await check?.close();
    }
    const shown = sink.shown;
    const more = sink.more;
    const note = [unappliedNote(filter), sink.undecodable.note("matching the pattern")].filter(Boolean).join("\n"); // the first met only by the built-in walk: ripgrep applies every .gitignore
    if (shown.length === 0) return textOutput(`No files match '${pattern}' (files ignored by .gitignore are skipped).${note ? `\n${note}` : ""}`);
    let text = shown.join("\n");
    if (more > 0) {
      text += `\n[${more} more paths not shown (${more + shown.length} matched, limit ${GLOB_MAX_RESULTS}); use a narrower pattern]`;
    }
    if (note) text += `\n${note}`;
    return textOutput(text);
  },
};
