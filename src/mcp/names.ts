/**
 * How an MCP server's tools become tools the model is offered: names, descriptions and schemas
 * made to fit the bridge's rules whatever the server sends.
 *
 * Names: `mcp__<server>__<tool>` must match the client-tool rule `[A-Za-z0-9_-]{1,64}` (the
 * model APIs' own). A tool name that already fits is kept as it is. One that does not (other
 * characters, or too long) is rewritten: every other character becomes `_`, it is cut to fit,
 * and `-` plus 8 hex digits of the SHA-256 of the server's name is appended — so the result is
 * deterministic, independent of the order the server lists its tools in, and two different
 * names cannot meet by rewriting. A tool whose final name is already taken (a name given twice
 * by the server) is left out, and the server's status says so.
 */
import { createHash } from "node:crypto";
import type { JsonObject } from "../protocol/types.js";

export const MCP_TOOL_PREFIX = "mcp__";
const NAME_RULE = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_NAME = 64;

/** At most this many tools of one server are offered; the rest are left out (and reported). */
export const MAX_TOOLS_PER_SERVER = 128;
/** Descriptions longer than this are cut (with a marker). */
export const MAX_DESCRIPTION_CHARS = 4096;
/** A tool whose input schema serializes longer than this is left out. */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/** The name the model sees for `tool` of `server` (a valid server name, see MCP_SERVER_NAME). */
export function offeredName(server: string, tool: string): string {
  const prefix = `${MCP_TOOL_PREFIX}${server}__`;
  const plain = prefix + tool;
  if (tool.length > 0 && NAME_RULE.test(plain)) return plain;
  const hash = createHash("sha256").update(tool).digest("hex").slice(0, 8);
  const room = MAX_NAME - prefix.length - hash.length - 1;
  return `${prefix}${tool.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, room)}-${hash}`;
}

/** What the server said about one tool (the parts the bridge reads). */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: unknown;
  annotations?: { readOnlyHint?: unknown };
}

/** A tool the bridge offers, with the server's name for it. */
export interface OfferedTool {
  name: string;
  serverToolName: string;
  description: string;
  parameters: JsonObject;
  readOnly: boolean;
}

/** The tools of `server` as offered, and a note per tool left out. */
export function offerTools(server: string, listed: readonly ListedTool[]): { tools: OfferedTool[]; leftOut: string[] } {
  const tools: OfferedTool[] = [];
  const leftOut: string[] = [];
  const taken = new Set<string>();
  for (const tool of listed) {
    if (typeof tool?.name !== "string") continue;
    if (tools.length >= MAX_TOOLS_PER_SERVER) {
      leftOut.push(`${listed.length - MAX_TOOLS_PER_SERVER} tools past the first ${MAX_TOOLS_PER_SERVER}`);
      break;
    }
    const name = offeredName(server, tool.name);
    if (taken.has(name)) {
      leftOut.push(`'${tool.name.slice(0, 100)}' (listed twice)`);
      continue;
    }
    const schema = tool.inputSchema;
    const schemaText = JSON.stringify(schema) ?? "";
    if (typeof schema !== "object" || schema === null || Array.isArray(schema) || Buffer.byteLength(schemaText) > MAX_SCHEMA_BYTES) {
      leftOut.push(`'${tool.name.slice(0, 100)}' (its input schema is not an object of at most ${MAX_SCHEMA_BYTES} bytes)`);
      continue;
    }
    taken.add(name);
    const description = typeof tool.description === "string" && tool.description.trim() ? tool.description : `The ${tool.name.slice(0, 100)} tool of the MCP server ${server}`;
    tools.push({
      name,
      serverToolName: tool.name,
      description: description.length > MAX_DESCRIPTION_CHARS ? `${description.slice(0, MAX_DESCRIPTION_CHARS)} […cut]` : description,
      // The model APIs want an object schema; MCP requires `type: "object"`, a server may omit it.
      parameters: { ...(JSON.parse(schemaText) as JsonObject), type: "object" },
      readOnly: tool.annotations?.readOnlyHint === true,
    });
  }
  return { tools, leftOut };
}
