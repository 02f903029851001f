/**
 * Wire types of the MCP servers addition (PROTOCOL.md "MCP servers"): what `initialize.mcpServers`
 * configures and what the `initialize` result reports. Kept beside types.ts (whose
 * `InitializeParams` and `InitializeResult` use these; protocol/index.ts exports both files) so
 * that file stays about the core wire.
 *
 * @module
 */

/** Server names: `[A-Za-z0-9-]{1,32}` — no `_`, so `mcp__<server>__<tool>` splits one way only. */
export const MCP_SERVER_NAME = /^[A-Za-z0-9-]{1,32}$/;
/** At most this many servers in one `initialize`. */
export const MAX_MCP_SERVERS = 32;
/** Default `startupTimeoutMs`: how long connecting (spawn or first request, MCP `initialize`, `tools/list`) may take. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000;
/** Default `toolTimeoutMs`: how long one `tools/call` may take before it is cancelled and answered with an error. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 120_000;

/** Settings every server takes. */
export interface McpServerTimeouts {
  /** Default 30 000. */
  startupTimeoutMs?: number;
  /** Default 120 000. */
  toolTimeoutMs?: number;
}

/** A server the bridge starts and speaks to over its stdin/stdout (one process group, like bash's commands). */
export interface McpStdioServerConfig extends McpServerTimeouts {
  /** The program: an absolute path, or a name looked up on PATH. */
  command: string;
  args?: string[];
  /** Added to the bridge's environment less its secrets (names as bash scrubs them). */
  env?: Record<string, string>;
  /** The server's working folder; relative to the workspace; default the workspace. */
  cwd?: string;
}

/** A server reached over MCP's streamable HTTP transport. */
export interface McpHttpServerConfig extends McpServerTimeouts {
  /** An `http:` or `https:` URL. */
  url: string;
  /** Sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
}

/** One entry of `initialize.mcpServers`. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** One entry of the `initialize` result's `mcpServers`, in the order the client gave them. */
export interface McpServerStatus {
  name: string;
  status: "connected" | "failed";
  /** The names the model is offered (`mcp__<server>__<tool>`), in the server's order; `[]` when failed. */
  tools: string[];
  /** Why the server failed (present only then). */
  error?: string;
}
