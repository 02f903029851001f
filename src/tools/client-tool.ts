/**
 * A tool the client offered (`initialize.clientTools`): to the model and to the loop it is a
 * tool like the built-ins (same schema shape, same `readOnly` rules); running it asks the
 * client through `ToolContext.client` (agent/client-requests.ts).
 */
import type { ClientToolSpec } from "../protocol/index.js";
import { ToolError, type Tool } from "./types.js";

/** Names client tools may not take: MCP's (PROTOCOL.md "MCP servers"). */
export const RESERVED_TOOL_PREFIX = "mcp__";

export function clientTool(spec: ClientToolSpec): Tool {
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    readOnly: spec.readOnly === true,
    async execute(args, ctx) {
      if (!ctx.client) throw new ToolError(`${spec.name} is a client tool, and this session has no client to run it`);
      return ctx.client.run(ctx.callId, spec.name, args, ctx.signal);
    },
  };
}
