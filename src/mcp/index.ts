/**
 * The bridge as an MCP client (PROTOCOL.md "MCP servers"): the servers of `initialize.mcpServers`
 * and their tools, as bridge tools.
 *
 * This is the entry of a chunk of its own (scripts/build.mjs; loaded by server/mcp-loader.ts):
 * the MCP SDK, its schemas and validator are loaded only by an `initialize` that configures
 * servers, so the cold start of every other client does not move.
 *
 * @module
 */
import type { Logger } from "../log.js";
import type { McpServerConfig, McpServerStatus } from "../protocol/mcp-types.js";
import type { PermissionMode } from "../protocol/types.js";
import type { Tool } from "../tools/types.js";
import { McpConnection } from "./connection.js";
import { MCP_TOOL_PREFIX, type OfferedTool } from "./names.js";

export { MCP_TOOL_PREFIX, offeredName } from "./names.js";

export interface McpServersOptions {
  workspace: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  version: string;
  /** Loads re2js (the packages chunk's), on which the tools' output schemas run their patterns (output-validator.ts). */
  loadRe2: () => Promise<unknown>;
}

/** The configured servers; `start` connects them all in parallel. */
export class McpServers {
  private readonly connections: McpConnection[];
  /** The tools as offered, rebuilt when a server's list changes. */
  private offered: Tool[] = [];

  constructor(configs: Record<string, McpServerConfig>, options: McpServersOptions) {
    const context = { ...options, onToolsChanged: () => this.rebuild() };
    this.connections = Object.entries(configs).map(([name, config]) => new McpConnection(name, config, context));
  }

  /** Connects every server at once; resolves when each is connected or has failed (never rejects). */
  async start(): Promise<McpServerStatus[]> {
    await Promise.all(this.connections.map((c) => c.start()));
    return this.connections.map((c) => c.status());
  }

  /**
   * The tools to offer a turn that starts now, once pending listings are done: every tool of every server that connected (a
   * crashed stdio server keeps its tools: the next call restarts it). Under `read-only`, only
   * those the server annotates `readOnlyHint: true`.
   */
  async tools(mode: PermissionMode): Promise<Tool[]> {
    // A tools/list_changed that came before the turn is answered before the turn starts.
    await Promise.all(this.connections.map((c) => c.listed()));
    return mode === "read-only" ? this.offered.filter((t) => t.readOnly) : this.offered;
  }

  /**
   * Why `name` is not among the tools a turn was offered, if it names an MCP server's tool: the
   * server failed to start, the bridge left the tool out (a name two tools claim, a name that
   * ran another tool before, a bad schema: names.ts), the tool is not read-only in `read-only`
   * mode, it appeared after the turn started, or the server has no such tool. The model reads
   * it in the "unknown tool" error.
   */
  explain(mode: PermissionMode, name: string): string | undefined {
    const connection = this.connections.find((c) => name.startsWith(`${MCP_TOOL_PREFIX}${c.name}__`));
    if (!connection) return undefined;
    const status = connection.status();
    const tool = connection.tools.find((t) => t.name === name);
    const withheld = connection.withheld.get(name);
    if (!tool && withheld) return `the MCP server ${connection.name} lists it, but the bridge leaves it out: ${withheld.join("; ")}`;
    if (!tool) return status.status === "failed" ? `the MCP server ${connection.name} is not available: ${status.error}` : `the MCP server ${connection.name} has no such tool`;
    if (mode === "read-only" && !tool.readOnly) return `not offered in read-only mode: the MCP server ${connection.name} does not annotate it readOnlyHint`;
    return `the MCP server ${connection.name} added it during this turn; it is offered from the next turn`;
  }

  /** Stops every server (stdio: its process group). */
  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  private rebuild(): void {
    this.offered = this.connections.flatMap((connection) => connection.tools.map((tool) => bridgeTool(connection, tool)));
  }
}

function bridgeTool(connection: McpConnection, tool: OfferedTool): Tool {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    readOnly: tool.readOnly,
    execute: (args, ctx) => connection.call(tool, args, ctx.signal),
  };
}
