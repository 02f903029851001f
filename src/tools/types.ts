/**
 * The interface of a built-in tool.
 */
import type { JsonObject, PermissionMode, TextBlock } from "../protocol/index.js";
import type { ToolSpec } from "../providers/types.js";

/** What a tool may use while it runs. */
export interface ToolContext {
  /** The absolute workspace path. */
  workspace: string;
  /** Aborts when the turn is cancelled, the bridge shuts down, or stdout closes. Tools must stop promptly. */
  signal: AbortSignal;
  permissionMode: PermissionMode;
  /** The session that called the tool. */
  sessionId: string;
  /** The tool call id. */
  callId: string;
  /** Runs a subagent in a child session (the `task` tool); absent where subagents are not allowed. */
  runSubagent?: (prompt: string, description: string | undefined, signal: AbortSignal) => Promise<ToolOutput>;
}

/** The result of a tool call: text for the model, and whether it is an error. */
export interface ToolOutput {
  content: TextBlock[];
  isError: boolean;
}

/** A built-in tool. */
export interface Tool extends ToolSpec {
  /** `true` for tools that change nothing: they may run concurrently, and stay in `read-only` mode. */
  readonly readOnly: boolean;
  /**
   * Runs the tool. The tool validates its own arguments (it owns its schema) and throws
   * `ToolError` for bad ones; any exception becomes an error result the model can read.
   */
  execute(args: JsonObject, ctx: ToolContext): Promise<ToolOutput>;
}

/** A text output. */
export function textOutput(text: string, isError = false): ToolOutput {
  return { content: [{ type: "text", text }], isError };
}

/** Thrown by tools for a failure the model should read as-is (bad path, no match, …). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}
