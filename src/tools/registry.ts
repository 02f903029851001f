/**
 * The built-in tools, and which of them a session is offered.
 */
import type { PermissionMode } from "../protocol/index.js";
import { readFileTool } from "./read-file.js";
import { taskTool } from "./task.js";
import type { Tool } from "./types.js";

/** Every built-in tool, by its contract name. */
export const BUILTIN_TOOLS: readonly Tool[] = [readFileTool, taskTool];

/** The tools offered under a permission mode and an optional allow-list. */
export function toolsFor(mode: PermissionMode, allow?: readonly string[]): Tool[] {
  return BUILTIN_TOOLS.filter((tool) => (mode !== "read-only" || tool.readOnly || tool.name === "task") && (!allow || allow.includes(tool.name)));
}
