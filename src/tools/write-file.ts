/**
 * `write_file {path, content}`: creates or overwrites a file, creating its parent folders.
 */
import { checkNameOnDisk } from "./name-on-disk.js";
import { openForWrite, writeAll } from "./confined-fs.js";
import { ToolError, textOutput, type Tool } from "./types.js";

/** Largest content accepted, in UTF-8 bytes. */
export const WRITE_FILE_MAX_BYTES = 10 * 1024 * 1024;

export const writeFileTool: Tool = {
  name: "write_file",
  readOnly: false,
  description:
    "Create a file, or replace a file's whole content, in the workspace. Parent folders are created. " +
    "To change part of an existing file prefer edit_file. Content is written as UTF-8, exactly as given.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace" },
      content: { type: "string", description: "The complete new content of the file" },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (ctx.permissionMode === "read-only") throw new ToolError("write_file is not available in read-only mode");
    if (typeof args.path !== "string" || args.path.length === 0) throw new ToolError("path is required and must be a non-empty string");
    if (typeof args.content !== "string") throw new ToolError("content is required and must be a string");
    const size = Buffer.byteLength(args.content, "utf8");
    if (size > WRITE_FILE_MAX_BYTES) {
      throw new ToolError(`content is ${size} bytes, over the ${WRITE_FILE_MAX_BYTES}-byte limit of write_file`);
    }
    const bytes = Buffer.from(args.content, "utf8");
    // Created (with its folders) or truncated through descriptors checked before a byte is written.
    await checkNameOnDisk(ctx.workspace, args.path, ctx.permissionMode, "write");
    const file = await openForWrite(ctx.workspace, args.path, ctx.permissionMode);
    try {
      await writeAll(file, bytes, ctx.signal);
    } catch (err) {
      ctx.signal.throwIfAborted();
      throw new ToolError(`cannot write ${args.path}: ${(err as Error).message}`);
    } finally {
      await file.handle.close().catch(() => undefined);
    }
    return textOutput(`${file.created ? "Created" : "Overwrote"} ${args.path} (${bytes.length} bytes written)`);
  },
};
