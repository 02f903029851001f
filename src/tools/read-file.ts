/**
 * `read_file {path, offset?, limit?}`: a text file's lines, numbered, within caps.
 */
import type { JsonObject } from "../protocol/index.js";
import { checkNameOnDisk } from "./name-on-disk.js";
import { openForRead } from "./confined-fs.js";
import type { OpenedFile } from "./confined-open.js";
import { ToolError, textOutput, type Tool, type ToolOutput } from "./types.js";

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
export function binaryReason(bytes: Buffer, more = false): string | undefined {
  const head = bytes.subarray(0, READ_FILE_TEXT_CHECK_BYTES);
  const nul = head.indexOf(0);
  if (nul >= 0) return `a NUL byte at offset ${nul}`;
  try {
    // stream: a character cut by the block's end is not an error (its rest follows); a sequence
    // cut by the file's own end is. A fresh decoder: a streaming one keeps the cut bytes.
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: more || bytes.length > head.length });
  } catch {
    return `bytes that are not UTF-8 in its first ${READ_FILE_TEXT_CHECK_BYTES}`;
  }
  return undefined;
}

/** The first read: enough for the default 2 000 lines of most files, and for the text check. */
const FIRST_READ_BYTES = 256 * 1024;
/** Later reads double up to this (a deep `offset` walks the file in few calls). */
const MAX_READ_BYTES = 2 * 1024 * 1024;

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
    await checkNameOnDisk(ctx.workspace, args.path, ctx.permissionMode, "read");
    const file = await openForRead(ctx.workspace, args.path, ctx.permissionMode);
    try {
      if (file.size > READ_FILE_MAX_BYTES) {
        throw new ToolError(`${args.path} is ${file.size} bytes, over the ${READ_FILE_MAX_BYTES}-byte limit of read_file`);
      }
      return await readLines(file, args.path, offset, limit, ctx.signal);
    } finally {
      await file.handle.close().catch(() => undefined);
    }
  },
};

/**
 * Lines `offset` to `offset + limit - 1`, numbered, read from the descriptor only as far as they
 * go (and one line past them, to say whether the file goes on): asking for the first 2 000
 * lines of a 10 MiB file reads their bytes, not the file. The total line count is given when
 * what was read holds the whole file (every small file); past that the note says "more than".
 */
export async function readLines(
  file: OpenedFile,
  requested: string,
  offset: number,
  limit: number,
  signal: AbortSignal,
  reads = { first: FIRST_READ_BYTES, max: MAX_READ_BYTES }, // tests cut chunk boundaries anywhere
): Promise<ToolOutput> {
  const decoder = new TextDecoder("utf-8");
  let position = 0;
  let chunk = Buffer.allocUnsafe(Math.min(Math.max(file.size, 1) + 1, reads.first));
  let pending = ""; // the start of a line whose newline has not been read yet
  let seen = 0; // complete lines before `pending`
  const out: string[] = [];
  let chars = 0;
  let last = offset - 1; // the last line shown
  for (;;) {
    signal.throwIfAborted();
    const { bytesRead } = await file.handle.read(chunk, 0, chunk.length, position);
    const eof = bytesRead === 0;
    if (position === 0) {
      if (eof) return textOutput(`(${requested} is empty)`);
      const binary = binaryReason(chunk.subarray(0, bytesRead), bytesRead === chunk.length);
      if (binary !== undefined) {
        return textOutput(`${requested} is a binary file (${file.size} bytes; ${binary}); read_file shows UTF-8 text files only`, true);
      }
    }
    position += bytesRead;
    if (position > READ_FILE_MAX_BYTES) throw new ToolError(`${requested} grew past the ${READ_FILE_MAX_BYTES}-byte limit while it was read`);
    const pieces = (pending + decoder.decode(chunk.subarray(0, bytesRead), { stream: !eof })).split("\n");
    // At the end of the file its last piece is a line too, unless the file ended with a newline.
    pending = eof ? "" : (pieces.pop() as string);
    if (eof && pieces.length > 0 && pieces[pieces.length - 1] === "" && seen + pieces.length > 1) pieces.pop();
    // The line at hand exists but is not shown: say so, with the total when the file is read whole.
    const stopBefore = () => {
      const rest = eof || position >= file.size ? ` of ${seen + pieces.length + (pending === "" ? 0 : 1)}` : ` of more than ${last}`;
      out.push(`[showing lines ${offset}-${last}${rest}; read on with offset ${last + 1}]`);
      return textOutput(out.join("\n"));
    };
    for (let k = 0; k < pieces.length; k++) {
      const n = seen + k + 1;
      if (n < offset) continue;
      if (n >= offset + limit) return stopBefore();
      let line = pieces[k].replace(/\r$/, "");
      if (line.length > READ_FILE_MAX_LINE_CHARS) {
        line = `${line.slice(0, READ_FILE_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]`;
      }
      const numbered = `${n}\t${line}`;
      if (chars + numbered.length > READ_FILE_MAX_OUTPUT_CHARS) return stopBefore();
      out.push(numbered);
      chars += numbered.length + 1;
      last = n;
    }
    seen += pieces.length;
    if (eof) break;
    if (chunk.length < reads.max && bytesRead === chunk.length) chunk = Buffer.allocUnsafe(Math.min(chunk.length * 2, reads.max));
  }
  if (offset > seen) throw new ToolError(`offset ${offset} is past the end of ${requested} (${seen} lines)`);
  return textOutput(out.join("\n"));
}
