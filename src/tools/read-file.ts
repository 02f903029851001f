/**
 * `read_file {path, offset?, limit?}`: a text file's lines, numbered, within caps.
 */
import type { JsonObject } from "../protocol/index.js";
import { openForRead, readAll } from "./confined-fs.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Files larger than this are refused whole; read them in parts with offset/limit. */
export const READ_FILE_MAX_BYTES = 10 * 1024 * 1024;
/** Lines returned when no `limit` is given. */
export const READ_FILE_DEFAULT_LINES = 2000;
/** Characters of one line kept; the rest is cut with a marker. */
export const READ_FILE_MAX_LINE_CHARS = 2000;
/** Characters returned at most in one result. */
export const READ_FILE_MAX_OUTPUT_CHARS = 256 * 1024;
/**
 * The first block that decides text or binary, as git (8000 bytes) and ripgrep check: only this
 * block is checked, so a 10 MiB read costs no extra pass over the file. An invalid byte past it
 * is read as U+FFFD, as before.
 */
export const READ_FILE_TEXT_CHECK_BYTES = 8192;

/**
 * Why `bytes` is not text, judged on its first block: a NUL byte, or bytes that are not UTF-8
 * (random data, an image without NULs, text in a legacy encoding). Undefined for text. Returning
 * such bytes decoded would be mojibake that costs the model tokens and tells it nothing.
 */
export function binaryReason(bytes: Buffer): string | undefined {
  const head = bytes.subarray(0, READ_FILE_TEXT_CHECK_BYTES);
  const nul = head.indexOf(0);
  if (nul >= 0) return `a NUL byte at offset ${nul}`;
  try {
    // stream: a character cut by the block's end is not an error (its rest follows); a sequence
    // cut by the file's own end is. A fresh decoder: a streaming one keeps the cut bytes.
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: bytes.length > head.length });
  } catch {
    return `bytes that are not UTF-8 in its first ${READ_FILE_TEXT_CHECK_BYTES}`;
  }
  return undefined;
}

function optionalPositiveInt(args: JsonObject, name: string): number | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ToolError(`${name} must be a positive integer (got ${JSON.stringify(value)})`);
  }
  return value;
}

export const readFileTool: Tool = {
  name: "read_file",
  readOnly: true,
  description:
    "Read a text file of the workspace. Returns numbered lines (`N\\tline`). " +
    `offset is the first line (1-based, default 1); limit the number of lines (default ${READ_FILE_DEFAULT_LINES}).`,
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace" },
      offset: { type: "integer", minimum: 1, description: "First line to read (1-based)" },
      limit: { type: "integer", minimum: 1, description: "How many lines to read" },
    },
    required: ["path"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (typeof args.path !== "string") throw new ToolError("path is required and must be a string");
    const offset = optionalPositiveInt(args, "offset") ?? 1;
    const limit = optionalPositiveInt(args, "limit") ?? READ_FILE_DEFAULT_LINES;
    // Opened once, checked on the descriptor (type, real path), read from that descriptor.
    const file = await openForRead(ctx.workspace, args.path, ctx.permissionMode);
    let bytes: Buffer;
    try {
      if (file.size > READ_FILE_MAX_BYTES) {
        throw new ToolError(`${args.path} is ${file.size} bytes, over the ${READ_FILE_MAX_BYTES}-byte limit of read_file`);
      }
      bytes = await readAll(file, READ_FILE_MAX_BYTES, args.path, ctx.signal);
    } finally {
      await file.handle.close().catch(() => undefined);
    }
    const binary = binaryReason(bytes);
    if (binary !== undefined) {
      return textOutput(`${args.path} is a binary file (${bytes.length} bytes; ${binary}); read_file shows UTF-8 text files only`, true);
    }
    const lines = bytes.toString("utf8").split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    if (bytes.length === 0) return textOutput(`(${args.path} is empty)`);
    if (offset > lines.length) {
      throw new ToolError(`offset ${offset} is past the end of ${args.path} (${lines.length} lines)`);
    }
    const out: string[] = [];
    let chars = 0;
    let last = offset - 1;
    for (let i = offset - 1; i < Math.min(lines.length, offset - 1 + limit); i++) {
      let line = lines[i].replace(/\r$/, "");
      if (line.length > READ_FILE_MAX_LINE_CHARS) {
        line = `${line.slice(0, READ_FILE_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]`;
      }
      const numbered = `${i + 1}\t${line}`;
      if (chars + numbered.length > READ_FILE_MAX_OUTPUT_CHARS) break;
      out.push(numbered);
      chars += numbered.length + 1;
      last = i + 1;
    }
    if (last < lines.length) {
      out.push(`[showing lines ${offset}-${last} of ${lines.length}; read on with offset ${last + 1}]`);
    }
    return textOutput(out.join("\n"));
  },
};
