/**
 * `glob {pattern}`: workspace files matching a glob pattern, `.gitignore` respected, sorted, capped.
 *
 * The walk is ripgrep's (`rg --files`, same rules as grep) when the machine has it, else the
 * built-in one (tinyglobby, gitignore.ts); the pattern is matched by picomatch either way, as
 * tinyglobby matches it. Each path shown is checked first: in a confined mode its real path must
 * be inside the workspace, so a name listed through a folder swapped for a link is dropped.
 */
import * as path from "node:path";
import { isConfined } from "./workspace.js";
import { GitignoreFilter, listFiles, patternEscapes } from "./gitignore.js";
import { ToolError, textOutput, type Tool } from "./types.js";
import { RIPGREP_COMMON_FLAGS, findRipgrep, runRipgrep } from "./search/ripgrep.js";

/** Paths returned at most; the rest is counted and cut. */
export const GLOB_MAX_RESULTS = 1000;
/** Longest pattern accepted. */
export const GLOB_MAX_PATTERN_CHARS = 4096;

/** How many listings each engine ran (tests check which engine a glob took). */
export const globEngineRuns = { ripgrep: 0, builtin: 0 };

type Matcher = (p: string) => boolean;
type Picomatch = (glob: string, options: Record<string, unknown>) => Matcher;

/** Every file under `cwd` that ripgrep's walk keeps, relative with `/`. */
async function ripgrepFiles(rg: string, cwd: string, follow: boolean, signal: AbortSignal): Promise<string[] | undefined> {
  const files: string[] = [];
  const args = [...RIPGREP_COMMON_FLAGS, "--files", "--null", ...(follow ? ["--follow"] : [])];
  const run = await runRipgrep({ rg, args, cwd, signal, separator: 0, onRecord: (rec) => void files.push(rec.toString("utf8")) });
  return run.code === 0 || run.code === 1 ? files : undefined;
}

export const globTool: Tool = {
  name: "glob",
  readOnly: true,
  description:
    "Find files of the workspace by glob pattern, e.g. `**/*.ts`, `src/**/test_*.py`, `*.{json,yaml}`. " +
    "Patterns are relative to the workspace root (`*.ts` matches only the root folder; use `**/` for any depth). " +
    "Returns matching file paths (files only, not folders), one per line, sorted; dotfiles are included. " +
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
    let files: string[] | undefined;
    if (rg) {
      const all = await ripgrepFiles(rg, workspace, !confined, ctx.signal);
      if (all) {
        globEngineRuns.ripgrep++;
        const picomatch = ((await import("picomatch")) as unknown as { default: Picomatch }).default;
        let normal = pattern.endsWith("/") ? pattern.slice(0, -1) : pattern;
        normal = path.posix.normalize(normal);
        const match = picomatch(normal, { dot: true, posix: true });
        files = all.filter((f) => match(f)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      }
    }
    if (!files) {
      globEngineRuns.builtin++;
      files = await listFiles({ patterns: [pattern], cwd: workspace, filter, signal: ctx.signal, followSymlinks: !confined });
    }
    // Check what is shown (a name listed through a swapped folder does not resolve inside).
    const shown: string[] = [];
    let dropped = 0;
    for (const file of files) {
      if (shown.length >= GLOB_MAX_RESULTS) break;
      ctx.signal.throwIfAborted();
      if (await filter.isReachable(path.resolve(workspace, file))) shown.push(file);
      else dropped++;
    }
    const total = files.length - dropped;
    if (shown.length === 0) return textOutput(`No files match '${pattern}' (files ignored by .gitignore are skipped).`);
    let text = shown.join("\n");
    if (total > shown.length) {
      text += `\n[${total - shown.length} more paths not shown (${total} matched, limit ${GLOB_MAX_RESULTS}); use a narrower pattern]`;
    }
    return textOutput(text);
  },
};
