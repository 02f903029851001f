/**
 * The built-in tools, and which of them a session is offered.
 */
import type { ClientToolSpec, PermissionMode } from "../protocol/index.js";
import { FINAL_ANSWER_TOOL } from "../protocol/output-types.js";
import { RESERVED_TOOL_PREFIX, clientTool } from "./client-tool.js";
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
 * the same mode and so the same narrowing. The client's tools come after the built-ins.
 */
export function toolsFor(mode: PermissionMode, allow?: readonly string[], clientTools: readonly ClientToolSpec[] = []): Tool[] {
  const builtins = BUILTIN_TOOLS.filter((tool) => (mode !== "read-only" || tool.readOnly || tool.name === "task") && (!allow || allow.includes(tool.name)));
  // Client tools follow the same rule as the built-ins: in `read-only`, only the read-only ones.
  return [...builtins, ...clientTools.map(clientTool).filter((tool) => mode !== "read-only" || tool.readOnly)];
}

/**
 * Why the client's tools cannot be offered as given, or `undefined`: a name taken by a
 * built-in, reserved for MCP tools (`mcp__…`), or given twice. (The name's alphabet is the schema's.)
 */
export function clientToolsProblem(specs: readonly ClientToolSpec[]): string | undefined {
  const seen = new Set<string>();
  for (const [i, { name }] of specs.entries()) {
    if (BUILTIN_TOOLS.some((tool) => tool.name === name)) return `params.clientTools.${i}.name: '${name}' is a built-in tool's name`;
    if (name === FINAL_ANSWER_TOOL) return `params.clientTools.${i}.name: '${name}' is reserved for structured output's final-answer tool`;
    if (name.startsWith(RESERVED_TOOL_PREFIX)) return `params.clientTools.${i}.name: '${name}' starts with '${RESERVED_TOOL_PREFIX}', which MCP tools' names take`;
    if (seen.has(name)) return `params.clientTools.${i}.name: '${name}' is given twice`;
    seen.add(name);
  }
  return undefined;
}
