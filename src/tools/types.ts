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
  /** Starts subagents for the calling session (the `task` tool); absent where subagents are not allowed. */
  subagents?: SubagentSpawner;
  /** Runs client tools (tools/client-tool.ts) by asking the client; present when the client offered tools. */
  client?: ClientToolRunner;
}

/**
 * Asks the client to run one of its tools for the calling session: records `tool/request`,
 * waits for `session/tool_result`, and resolves with its content — or with an error output
 * when the deadline passes, the input ends or `signal` aborts. Never rejects.
 */
export interface ClientToolRunner {
  run(callId: string, name: string, args: JsonObject, signal: AbortSignal): Promise<ToolOutput>;
}

/** What the `task` tool asks of a subagent. */
export interface SubagentRequest {
  /** The full instructions for the subagent. */
  prompt: string;
  /** A short label for the work. */
  description?: string;
}

/**
 * Starts subagents on behalf of one session (agent/turn-runner.ts implements it). Each spawn runs
 * one turn in a new child session with the same provider, model, workspace and tool gate as the
 * parent, one level deeper, and ends when the turn settles or `signal` aborts.
 */
export interface SubagentSpawner {
  /** Runs the subagent's turn and returns its final text as a tool output (an error output when the turn did not complete). */
  spawn(request: SubagentRequest, signal: AbortSignal): Promise<ToolOutput>;
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
