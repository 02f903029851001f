/**
 * A server's `tools/list`, read a tool at a time.
 *
 * Invariants, and why:
 * - One malformed tool never fails the list. The SDK's `listTools` validates the whole result
 *   against its tool schema, so one tool whose input schema lacks `type: "object"` (which MCP
 *   requires and servers omit), or has any other shape the SDK refuses, failed the server's
 *   start with a zod error dump. Here the result's `tools` is taken as it is: each entry with a
 *   string name goes to names.ts, which offers it (adding `type: "object"`) or leaves it out
 *   saying why.
 * - The tools the SDK's schema takes are handed to the SDK's per-tool cache once per listing,
 *   all pages together (its own `listTools` replaced it page by page, so only the last page's
 *   output schemas were checked): `callTool` checks structured results against them.
 *
 * @module
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { PaginatedResultSchema, ToolSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/v4";
import type { ListedTool } from "./names.js";

const LenientListToolsResultSchema = PaginatedResultSchema.extend({ tools: z.array(z.unknown()) });

export interface ToolPage {
  /** The entries with a string name, as the server sent them (names.ts decides), at most `room`. */
  tools: ListedTool[];
  /** Those the SDK's tool schema takes (after adding a missing `type: "object"`). */
  valid: Tool[];
  /** Whether the page named more tools than `room`. */
  unread: boolean;
  nextCursor: string | undefined;
}

/** One page of `tools/list`; its first `room` named tools are read. */
export async function listToolPage(client: Client, cursor: string | undefined, options: RequestOptions, room: number): Promise<ToolPage> {
  const result = await client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } }, LenientListToolsResultSchema, options);
  const tools: ListedTool[] = [];
  const valid: Tool[] = [];
  for (const entry of result.tools) {
    if (typeof entry !== "object" || entry === null || typeof (entry as { name?: unknown }).name !== "string") continue;
    if (tools.length === room) return { tools, valid, unread: true, nextCursor: result.nextCursor };
    tools.push(entry as ListedTool);
    const input = (entry as { inputSchema?: unknown }).inputSchema;
    const typed = typeof input === "object" && input !== null && !Array.isArray(input) && !("type" in input) ? { ...entry, inputSchema: { ...input, type: "object" } } : entry;
    const parsed = ToolSchema.safeParse(typed);
    if (parsed.success) valid.push(parsed.data);
  }
  return { tools, valid, unread: false, nextCursor: result.nextCursor };
}

/** Hands the listed tools' output schemas and task support to the SDK's per-tool cache (replacing the last listing's). */
export function cacheListedTools(client: Client, valid: Tool[]): void {
  (client as unknown as { cacheToolMetadata(tools: Tool[]): void }).cacheToolMetadata(valid);
}
