/**
 * `edit_file {path, oldText, newText, replaceAll?}`: exact-text replacement in an existing file.
 *
 * The result is held to the same cap as the file it replaces: its size is computed from the
 * match count before it is built, so one `replaceAll` cannot turn a file under the cap into
 * hundreds of megabytes (on disk or in memory).
 */
import { checkNameOnDisk } from "./name-on-disk.js";
import { openForUpdate, readAll, writeAll } from "./confined-fs.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Files larger than this are not edited, and no edit may make a file larger than this. */
export const EDIT_FILE_MAX_BYTES = 10 * 1024 * 1024;
/** Match positions kept for messages (line numbers); the rest are only counted. */
const SHOWN_MATCHES = 10;

/** How many non-overlapping occurrences of `needle` are in `haystack`, and where the first few start. */
function occurrences(haystack: string, needle: string): { count: number; first: number[] } {
  const first: number[] = [];
  let count = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) {
    if (count++ < SHOWN_MATCHES) first.push(i);
  }
  return { count, first };
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/**
 * The UTF-8 size of `before` with every occurrence of `oldText` replaced by `newText`, without
 * building it. The pieces between matches are measured one by one, since a match may split a
 * surrogate pair (each half then encodes as three bytes).
 */
function resultSize(before: string, oldText: string, newBytes: number): number {
  let size = 0;
  let last = 0;
  for (let i = before.indexOf(oldText); i !== -1; i = before.indexOf(oldText, i + oldText.length)) {
    size += Buffer.byteLength(before.slice(last, i), "utf8") + newBytes;
    last = i + oldText.length;
  }
  return size + Buffer.byteLength(before.slice(last), "utf8");
}

/** `before` with every occurrence replaced, encoded straight into a buffer of the computed `size`. */
function replaced(before: string, oldText: string, newText: Buffer, size: number): Buffer {
  // Slices rather than String.replace, whose `$&`-style patterns would rewrite newText.
  const out = Buffer.alloc(size);
  let at = 0;
  let last = 0;
  for (let i = before.indexOf(oldText); i !== -1; i = before.indexOf(oldText, i + oldText.length)) {
    at += out.write(before.slice(last, i), at, "utf8");
    at += newText.copy(out, at);
    last = i + oldText.length;
  }
  at += out.write(before.slice(last), at, "utf8");
  return out.subarray(0, at);
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
    // Read and written back through one descriptor, checked (type, real path) when opened.
    await checkNameOnDisk(ctx.workspace, args.path, ctx.permissionMode, "edit");
    const file = await openForUpdate(ctx.workspace, args.path, ctx.permissionMode);
    try {
      if (file.size > EDIT_FILE_MAX_BYTES) throw new ToolError(`${args.path} is ${file.size} bytes, over the ${EDIT_FILE_MAX_BYTES}-byte limit of edit_file`);
      const bytes = await readAll(file, EDIT_FILE_MAX_BYTES, args.path, ctx.signal);
      if (bytes.subarray(0, 8192).includes(0)) throw new ToolError(`${args.path} is a binary file; edit_file edits text files only`);
      const before = bytes.toString("utf8");
      const found = occurrences(before, oldText);
      if (found.count === 0) {
        throw new ToolError(`oldText was not found in ${args.path} (0 matches); it must match exactly, including whitespace — read the file again`);
      }
      if (found.count > 1 && !replaceAll) {
        const lines = found.first.map((o) => lineOf(before, o));
        throw new ToolError(
          `oldText matches ${found.count} places in ${args.path} (at lines ${lines.join(", ")}${found.count > lines.length ? ", …" : ""}); ` +
            "add surrounding text to make it unique, or set replaceAll to replace every one",
        );
      }
      const newBytes = Buffer.from(newText, "utf8");
      const size = resultSize(before, oldText, newBytes.length);
      if (size > EDIT_FILE_MAX_BYTES) {
        throw new ToolError(
          `replacing ${found.count} occurrence${found.count === 1 ? "" : "s"} would make ${args.path} ${size} bytes, ` +
            `over the ${EDIT_FILE_MAX_BYTES}-byte limit of edit_file; nothing was changed (edit fewer places at a time, or write a smaller file)`,
        );
      }
      try {
        await writeAll(file, replaced(before, oldText, newBytes, size), ctx.signal);
      } catch (err) {
        ctx.signal.throwIfAborted();
        throw new ToolError(`cannot write ${args.path}: ${(err as Error).message}`);
      }
      const where = found.count === 1 ? ` at line ${lineOf(before, found.first[0])}` : "";
      return textOutput(`Edited ${args.path}: replaced ${found.count} occurrence${found.count === 1 ? "" : "s"}${where}`);
    } finally {
      await file.handle.close().catch(() => undefined);
    }
  },
};
