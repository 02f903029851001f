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
 * - Every tool read is handed to the SDK's per-tool cache once per listing, all pages together
 *   (its own `listTools` replaced it page by page, so only the last page's output schemas were
 *   checked), whatever the SDK's tool schema says of the entry: `callTool` checks structured
 *   results against each `outputSchema` (a schema that cannot be used fails that tool's calls,
 *   saying why: output-validator.ts). Were only the entries the SDK's schema takes cached, a
 *   tool offered with an entry it refuses (an output schema without `type: "object"`, an
 *   annotation of the wrong type, a boolean property schema) would have its results passed on
 *   unchecked, without a word.
 *
 * @module
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { PaginatedResultSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/v4";
import type { ListedTool } from "./names.js";

const LenientListToolsResultSchema = PaginatedResultSchema.extend({ tools: z.array(z.unknown()) });

export interface ToolPage {
  /** The entries with a string name, as the server sent them (names.ts decides), at most `room`. */
  tools: ListedTool[];
  /** What the SDK's per-tool cache reads of each (`cacheListedTools`): its name, output schema and task support. */
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
    const { name, outputSchema, execution } = entry as { name: string; outputSchema?: unknown; execution?: unknown };
    valid.push({ name, inputSchema: { type: "object" }, outputSchema, execution } as Tool);
  }
  return { tools, valid, unread: false, nextCursor: result.nextCursor };
}

/** Hands the listed tools' output schemas and task support to the SDK's per-tool cache (replacing the last listing's). */
export function cacheListedTools(client: Client, valid: Tool[]): void {
  (client as unknown as { cacheToolMetadata(tools: Tool[]): void }).cacheToolMetadata(valid);
}
