/**
 * `write_file {path, content}`: creates or overwrites a file, creating its parent folders.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { resolveInWorkspace } from "./workspace.js";
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
    const bytes = Buffer.from(args.content, "utf8");
    if (bytes.length > WRITE_FILE_MAX_BYTES) {
      throw new ToolError(`content is ${bytes.length} bytes, over the ${WRITE_FILE_MAX_BYTES}-byte limit of write_file`);
    }
    const file = resolveInWorkspace(ctx.workspace, args.path, ctx.permissionMode);
    let existed = false;
    try {
      const stat = await fs.stat(file);
      if (stat.isDirectory()) throw new ToolError(`${args.path} is a directory; give a file path`);
      existed = true;
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw new ToolError(`cannot write ${args.path}: ${(err as Error).message}`);
    }
    try {
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, bytes, { signal: ctx.signal });
    } catch (err) {
      ctx.signal.throwIfAborted();
      throw new ToolError(`cannot write ${args.path}: ${(err as Error).message}`);
    }
    return textOutput(`${existed ? "Overwrote" : "Created"} ${args.path} (${bytes.length} bytes written)`);
  },
};
