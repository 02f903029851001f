/**
 * How an MCP server's tools become tools the model is offered: names, descriptions and schemas
 * made to fit the bridge's rules whatever the server sends.
 *
 * Names: `mcp__<server>__<tool>` must match the client-tool rule `[A-Za-z0-9_-]{1,64}` (the
 * model APIs' own). A tool name that already fits is kept as it is. One that does not (other
 * characters, or too long) is rewritten: every other character becomes `_`, it is cut to fit,
 * and `-` plus 8 hex digits of the SHA-256 of the tool's name is appended — so the name a tool
 * gets is a function of its own name only, never of the other tools or of their order.
 *
 * Rewriting can still meet another name: a tool literally named like another's rewrite
 * (`a_b-1a2b3c4d` beside `a/b`), two rewrites whose 8 hex digits agree, or one name listed
 * twice. Whichever comes first in the list must not win (a reordered `tools/list` would flip
 * which tool the name runs), so every tool of a name claimed more than once is left out, with
 * the reason, and the name is offered by no tool. And a name, once it ran one server tool on
 * a connection, never silently runs another after `tools/list_changed`: a later list that
 * would bind it to a different tool leaves that tool out (`bound`, kept per connection).
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
/** A note on a contested name quotes at most this many of the other tools that claim it. */
const MAX_NAMES_QUOTED = 5;
/** A tool whose input schema serializes longer than this is left out. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/**
 * The descriptions and schemas of one server's offered tools, together, at most: each model
 * request carries them all, and 128 tools at the per-tool caps would be megabytes of every
 * request. A tool that would pass it is left out.
 */
export const MAX_SERVER_TOOL_BYTES = 256 * 1024;

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

/**
 * The tools of `server` as offered, and a note per tool left out; `withheld`: the same notes by
 * the name the tool would have had, so a call of it tells the model why (not "no such tool").
 * `bound`: the offered names of this connection's earlier lists and the server tool each ran;
 * updated with this list's.
 */
export function offerTools(
  server: string,
  listed: readonly ListedTool[],
  bound = new Map<string, string>(),
): { tools: OfferedTool[]; leftOut: string[]; withheld: Map<string, string[]> } {
  const tools: OfferedTool[] = [];
  const leftOut: string[] = [];
  const withheld = new Map<string, string[]>();
  // Every step is linear in the list: a hostile server's list of a million copies of one name
  // must not hold the main thread (every session waits on it) nor make a note per copy.
  const leave = (name: string, note: string) => {
    leftOut.push(note);
    const notes = withheld.get(name);
    if (notes) notes.push(note);
    else withheld.set(name, [note]);
  };
  const named = listed.filter((tool) => typeof tool?.name === "string");
  let offeredBytes = 0;
  // Who claims each offered name, over the whole list, before any is offered: order-independent.
  // Each distinct tool name once, with how many times it was listed.
  const claims = new Map<string, Map<string, number>>();
  for (const tool of named) {
    const name = offeredName(server, tool.name);
    let claimants = claims.get(name);
    if (!claimants) claims.set(name, (claimants = new Map()));
    claimants.set(tool.name, (claimants.get(tool.name) ?? 0) + 1);
  }
  const quote = (name: string) => `'${name.slice(0, 100)}'`;
  const quoteSome = (names: string[]) =>
    names.length <= MAX_NAMES_QUOTED ? names.map(quote).join(", ") : `${names.slice(0, MAX_NAMES_QUOTED).map(quote).join(", ")} and ${names.length - MAX_NAMES_QUOTED} more`;
  for (const [at, tool] of named.entries()) {
    if (tools.length >= MAX_TOOLS_PER_SERVER) {
      leftOut.push(`${notYetNamed(server, named, at, claims)} tools past the first ${MAX_TOOLS_PER_SERVER}`);
      break;
    }
    const name = offeredName(server, tool.name);
    const claimants = claims.get(name)!;
    const copies = claimants.get(tool.name)!;
    // A later copy of a name already noted (below: one note per distinct tool name).
    if (copies === 0) continue;
    if (claimants.size > 1 || copies > 1) {
      claimants.set(tool.name, 0);
      const others = [...claimants.keys()].filter((other) => other !== tool.name);
      leave(
        name,
        others.length === 0
          ? `${quote(tool.name)} (listed ${copies} times; no copy is offered)`
          : `${quote(tool.name)} (its name ${name} is also the name of ${quoteSome(others)}${copies > 1 ? `, and it is listed ${copies} times` : ""}; none of them is offered)`,
      );
      continue;
    }
    const before = bound.get(name);
    if (before !== undefined && before !== tool.name) {
      leave(name, `${quote(tool.name)} (its name ${name} ran ${quote(before)} before tools/list_changed; it is not given to another tool)`);
      continue;
    }
    const schema = tool.inputSchema;
    const schemaText = JSON.stringify(schema) ?? "";
    if (typeof schema !== "object" || schema === null || Array.isArray(schema) || Buffer.byteLength(schemaText) > MAX_SCHEMA_BYTES) {
      leave(name, `${quote(tool.name)} (its input schema is not an object of at most ${MAX_SCHEMA_BYTES} bytes)`);
      continue;
    }
    const full = typeof tool.description === "string" && tool.description.trim() ? tool.description : `The ${tool.name.slice(0, 100)} tool of the MCP server ${server}`;
    const description = full.length > MAX_DESCRIPTION_CHARS ? `${full.slice(0, MAX_DESCRIPTION_CHARS)} […cut]` : full;
    const bytes = Buffer.byteLength(schemaText) + Buffer.byteLength(description);
    if (offeredBytes + bytes > MAX_SERVER_TOOL_BYTES) {
      leave(name, `${quote(tool.name)} (the server's tools offered before it hold ${offeredBytes} bytes of descriptions and schemas; with its ${bytes} they would pass ${MAX_SERVER_TOOL_BYTES})`);
      continue;
    }
    offeredBytes += bytes;
    bound.set(name, tool.name);
    tools.push({
      name,
      serverToolName: tool.name,
      description,
      // The model APIs want an object schema; MCP requires `type: "object"`, a server may omit it.
      parameters: { ...(JSON.parse(schemaText) as JsonObject), type: "object" },
      readOnly: tool.annotations?.readOnlyHint === true,
    });
  }
  // Sorted: what the model reads of a contested name must not depend on the list's order either.
  for (const notes of withheld.values()) notes.sort();
  return { tools, leftOut, withheld };
}

/**
 * The distinct tools of `named` from `at` on that no note names yet (`claims` holds 0 copies of
 * a name already noted): the count of tools past the cap counts each tool once, as the notes do,
 * and none a note before it named.
 */
function notYetNamed(server: string, named: readonly ListedTool[], at: number, claims: Map<string, Map<string, number>>): number {
  const rest = new Set<string>();
  for (let i = at; i < named.length; i++) {
    const tool = named[i].name;
    if (claims.get(offeredName(server, tool))?.get(tool) !== 0) rest.add(tool);
  }
  return rest.size;
}
