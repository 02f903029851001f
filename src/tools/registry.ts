/**
 * The built-in tools, and which of them a session is offered.
 */
import type { PermissionMode } from "../protocol/index.js";
import { bashTool } from "./bash.js";
import { editFileTool } from "./edit-file.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import { readFileTool } from "./read-file.js";
import { taskTool } from "./task.js";
import type { Tool } from "./types.js";
import { writeFileTool } from "./write-file.js";

/** Every built-in tool, by its contract name, in the order the model is shown them. */
export const BUILTIN_TOOLS: readonly Tool[] = [bashTool, readFileTool, writeFileTool, editFileTool, globTool, grepTool, taskTool];

/**
 * The tools offered under a permission mode and an optional allow-list. `read-only` drops the
 * tools that change things (bash, write_file, edit_file); `task` stays, since its child inherits
 * the same mode and so the same narrowing.
 */
export function toolsFor(mode: PermissionMode, allow?: readonly string[]): Tool[] {
  return BUILTIN_TOOLS.filter((tool) => (mode !== "read-only" || tool.readOnly || tool.name === "task") && (!allow || allow.includes(tool.name)));
}
