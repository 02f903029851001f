/**
 * `edit_file {path, oldText, newText, replaceAll?}`: exact-text replacement in an existing file.
 */
import * as fs from "node:fs/promises";
import { resolveInWorkspace } from "./workspace.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Files larger than this are not edited. */
export const EDIT_FILE_MAX_BYTES = 10 * 1024 * 1024;

/** Start offsets of the non-overlapping occurrences of `needle` in `haystack`. */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) found.push(i);
  return found;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

export const editFileTool: Tool = {
  name: "edit_file",
  readOnly: false,
  description:
    "Replace exact text in an existing workspace file. oldText must match the file exactly " +
    "(whitespace and indentation included) and, unless replaceAll is true, exactly once — include enough " +
    "surrounding lines to make it unique. With replaceAll every occurrence is replaced. " +
    "Read the file first; to create a file use write_file.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace" },
      oldText: { type: "string", description: "The exact text to replace (non-empty)" },
      newText: { type: "string", description: "The text to put in its place (may be empty to delete)" },
      replaceAll: { type: "boolean", description: "Replace every occurrence instead of requiring exactly one (default false)" },
    },
    required: ["path", "oldText", "newText"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (ctx.permissionMode === "read-only") throw new ToolError("edit_file is not available in read-only mode");
    if (typeof args.path !== "string" || args.path.length === 0) throw new ToolError("path is required and must be a non-empty string");
    if (typeof args.oldText !== "string") throw new ToolError("oldText is required and must be a string");
    if (args.oldText.length === 0) throw new ToolError("oldText must not be empty; to create or rewrite a whole file use write_file");
    if (typeof args.newText !== "string") throw new ToolError("newText is required and must be a string");
    if (args.replaceAll !== undefined && args.replaceAll !== null && typeof args.replaceAll !== "boolean") {
      throw new ToolError(`replaceAll must be a boolean (got ${JSON.stringify(args.replaceAll)})`);
    }
    const replaceAll = args.replaceAll === true;
    const { oldText, newText } = args;
    if (oldText === newText) throw new ToolError("newText is identical to oldText; nothing to change");
    const file = resolveInWorkspace(ctx.workspace, args.path, ctx.permissionMode);
    let stat;
    try {
      stat = await fs.stat(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new ToolError(`no such file: ${args.path} (use write_file to create it)`);
      throw new ToolError(`cannot read ${args.path}: ${(err as Error).message}`);
    }
    if (!stat.isFile()) throw new ToolError(`${args.path} is not a regular file`);
    if (stat.size > EDIT_FILE_MAX_BYTES) throw new ToolError(`${args.path} is ${stat.size} bytes, over the ${EDIT_FILE_MAX_BYTES}-byte limit of edit_file`);
    const bytes = await fs.readFile(file, { signal: ctx.signal });
    if (bytes.subarray(0, 8192).includes(0)) throw new ToolError(`${args.path} is a binary file; edit_file edits text files only`);
    const before = bytes.toString("utf8");
    const found = occurrences(before, oldText);
    if (found.length === 0) {
      throw new ToolError(`oldText was not found in ${args.path} (0 matches); it must match exactly, including whitespace — read the file again`);
    }
    if (found.length > 1 && !replaceAll) {
      const lines = found.slice(0, 10).map((o) => lineOf(before, o));
      throw new ToolError(
        `oldText matches ${found.length} places in ${args.path} (at lines ${lines.join(", ")}${found.length > 10 ? ", …" : ""}); ` +
          "add surrounding text to make it unique, or set replaceAll to replace every one",
      );
    }
    // Slice rather than String.replace, whose `$&`-style patterns would rewrite newText.
    const parts: string[] = [];
    let last = 0;
    for (const offset of found) {
      parts.push(before.slice(last, offset), newText);
      last = offset + oldText.length;
    }
    parts.push(before.slice(last));
    const after = parts.join("");
    try {
      await fs.writeFile(file, after, { encoding: "utf8", signal: ctx.signal });
    } catch (err) {
      ctx.signal.throwIfAborted();
      throw new ToolError(`cannot write ${args.path}: ${(err as Error).message}`);
    }
    const where = found.length === 1 ? ` at line ${lineOf(before, found[0])}` : "";
    return textOutput(`Edited ${args.path}: replaced ${found.length} occurrence${found.length === 1 ? "" : "s"}${where}`);
  },
};
