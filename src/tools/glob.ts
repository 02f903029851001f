/**
 * `glob {pattern}`: workspace files matching a glob pattern, `.gitignore` respected, sorted, capped.
 */
import * as path from "node:path";
import { isConfined } from "./workspace.js";
import { GitignoreFilter, listFiles, patternEscapes } from "./gitignore.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Paths returned at most; the rest is counted and cut. */
export const GLOB_MAX_RESULTS = 1000;
/** Longest pattern accepted. */
export const GLOB_MAX_PATTERN_CHARS = 4096;

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
    if (confined && patternEscapes(pattern)) {
      throw new ToolError(
        `pattern '${pattern}' reaches outside the workspace (absolute, '~' or a '..' segment); ` +
          `permission mode '${ctx.permissionMode}' confines glob to the workspace — use a pattern relative to it`,
      );
    }
    const workspace = path.resolve(ctx.workspace);
    const filter = new GitignoreFilter(workspace, confined);
    const files = await listFiles({ patterns: [pattern], cwd: workspace, filter, signal: ctx.signal, followSymlinks: !confined });
    if (files.length === 0) return textOutput(`No files match '${pattern}' (files ignored by .gitignore are skipped).`);
    const shown = files.slice(0, GLOB_MAX_RESULTS);
    let text = shown.join("\n");
    if (files.length > shown.length) {
      text += `\n[${files.length - shown.length} more paths not shown (${files.length} matched, limit ${GLOB_MAX_RESULTS}); use a narrower pattern]`;
    }
    return textOutput(text);
  },
};
