/**
 * `grep {pattern, path?}`: a JavaScript regular expression over the text files of a folder or one
 * file, `.gitignore` respected, binary and oversized files skipped, results capped.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { isConfined, resolveInWorkspace } from "./workspace.js";
import { GitignoreFilter, listFiles } from "./gitignore.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Matching lines returned at most; the search stops there. */
export const GREP_MAX_MATCHES = 500;
/** Characters of a matching line shown; the rest is cut with a marker. */
export const GREP_MAX_LINE_CHARS = 300;
/** Files larger than this are skipped (and counted in the result). */
export const GREP_MAX_FILE_BYTES = 2 * 1024 * 1024;
/** A file with a NUL byte in its first this-many bytes is binary and skipped. */
export const GREP_BINARY_SNIFF_BYTES = 8192;
/** Longest pattern accepted. */
export const GREP_MAX_PATTERN_CHARS = 4096;

const SLASH_FORM = /^\/(.+)\/([a-z]*)$/s;

/** Compiles the `pattern` argument: a regex source, or `/source/flags` (flags among `imsu`). */
export function compilePattern(pattern: string): RegExp {
  let source = pattern;
  let flags = "";
  const slash = SLASH_FORM.exec(pattern);
  if (slash && /^[imsuvdgy]*$/.test(slash[2])) {
    source = slash[1];
    flags = slash[2].replace(/[gyd]/g, "");
  }
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new ToolError(`invalid regular expression ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
}

function toPosix(p: string): string {
  return path.sep === "/" ? p : p.split(path.sep).join("/");
}

function cutLine(line: string): string {
  return line.length > GREP_MAX_LINE_CHARS ? `${line.slice(0, GREP_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]` : line;
}

export const grepTool: Tool = {
  name: "grep",
  readOnly: true,
  description:
    "Search the text files of the workspace with a JavaScript regular expression (e.g. `function\\s+main`, " +
    "or `/todo/i` for flags). path is a folder or file relative to the workspace (default: the whole workspace). " +
    "Returns matching lines as `path:line:text` (line numbers 1-based), in path order. " +
    "Files ignored by .gitignore, the .git folder, binary files and files over " +
    `${GREP_MAX_FILE_BYTES / (1024 * 1024)} MiB are skipped. At most ${GREP_MAX_MATCHES} matches; ` +
    `lines are cut at ${GREP_MAX_LINE_CHARS} characters.`,
  parameters: {
    type: "object",
    properties: {
      pattern: {
        type: "string",
        description: "JavaScript regular expression, matched against each line; `/source/flags` form for flags (i, m, s, u)",
      },
      path: { type: "string", description: "Folder or file to search, relative to the workspace (default: the workspace root)" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    const pattern = args.pattern;
    if (typeof pattern !== "string" || pattern.length === 0) {
      throw new ToolError("pattern is required and must be a non-empty string (a JavaScript regular expression)");
    }
    if (pattern.length > GREP_MAX_PATTERN_CHARS) throw new ToolError(`pattern is longer than ${GREP_MAX_PATTERN_CHARS} characters`);
    if (args.path !== undefined && args.path !== null && typeof args.path !== "string") {
      throw new ToolError(`path must be a string (got ${JSON.stringify(args.path)})`);
    }
    const requested = typeof args.path === "string" && args.path.length > 0 ? args.path : ".";
    const regex = compilePattern(pattern);
    const workspace = path.resolve(ctx.workspace);
    const confined = isConfined(ctx.permissionMode);
    const target = resolveInWorkspace(workspace, requested, ctx.permissionMode);

    let stat;
    try {
      stat = await fs.stat(target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new ToolError(`no such file or folder: ${requested}`);
      throw new ToolError(`cannot search ${requested}: ${(err as Error).message}`);
    }
    const relToWs = path.relative(workspace, target);
    const insideWs = relToWs === "" || (relToWs !== ".." && !relToWs.startsWith(`..${path.sep}`) && !path.isAbsolute(relToWs));
    const display = (abs: string): string => (insideWs ? toPosix(path.relative(workspace, abs)) || "." : abs);

    let files: string[];
    const single = !stat.isDirectory();
    if (single) {
      if (!stat.isFile()) throw new ToolError(`${requested} is neither a regular file nor a folder`);
      files = [target];
    } else {
      const filter = new GitignoreFilter(insideWs ? workspace : target, confined);
      const rel = await listFiles({ patterns: ["**/*"], cwd: target, filter, signal: ctx.signal, followSymlinks: !confined });
      files = rel.map((f) => path.join(target, f));
    }

    const out: string[] = [];
    let searched = 0;
    let skippedLarge = 0;
    let skippedBinary = 0;
    let capped = false;
    for (const file of files) {
      ctx.signal.throwIfAborted();
      let bytes: Buffer;
      try {
        const st = await fs.stat(file);
        if (!st.isFile()) continue;
        if (st.size > GREP_MAX_FILE_BYTES) {
          skippedLarge++;
          continue;
        }
        bytes = await fs.readFile(file, { signal: ctx.signal });
      } catch (err) {
        ctx.signal.throwIfAborted();
        continue; // vanished or unreadable: skip silently
      }
      if (bytes.subarray(0, GREP_BINARY_SNIFF_BYTES).includes(0)) {
        skippedBinary++;
        continue;
      }
      searched++;
      const lines = bytes.toString("utf8").split("\n");
      const shown = display(file);
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
        if (!regex.test(line)) continue;
        if (out.length >= GREP_MAX_MATCHES) {
          capped = true;
          break;
        }
        out.push(`${shown}:${i + 1}:${cutLine(line)}`);
      }
      if (capped) break;
    }

    const notes: string[] = [];
    if (capped) notes.push(`[stopped after ${GREP_MAX_MATCHES} matches; there are more — narrow the pattern or the path]`);
    if (skippedLarge > 0) notes.push(`[skipped ${skippedLarge} file(s) over ${GREP_MAX_FILE_BYTES} bytes]`);
    if (single && skippedBinary > 0) notes.push(`[${requested} is a binary file; not searched]`);
    if (out.length === 0) {
      const where = single ? requested : `${requested} (${searched} text files searched; .gitignore'd and binary files skipped)`;
      return textOutput([`No matches for ${regex} in ${where}.`, ...notes].join("\n"));
    }
    return textOutput([...out, ...notes].join("\n"));
  },
};
