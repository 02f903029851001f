/**
 * Loads the MCP client chunk (src/mcp/index.ts) — only for an `initialize` that configures
 * `mcpServers`.
 *
 * Why a chunk and not a dynamic import like agent-modules.ts: esbuild's CommonJS bundle inlines
 * dynamic imports, and the MCP SDK (with its zod schemas and JSON Schema validator) would then
 * be parsed, and its size compiled into the SEA's code cache, by every start of the bridge. So
 * scripts/build.mjs builds src/mcp/index.ts into a bundle of its own, `build/mcp-client.cjs`,
 * and puts it in the SEA as an asset of that name; chunk.ts evaluates it on first use. Run from source
 * (the tests), `__MCP_CHUNK__` is undefined and the module is imported as usual.
 *
 * @module
 */
import { evaluateChunk } from "./chunk.js";

export type McpModule = typeof import("../mcp/index.js");

/** Set by scripts/build.mjs to the chunk's file (and asset) name; undefined when run from source. */
declare const __MCP_CHUNK__: string | undefined;

let loading: Promise<McpModule> | undefined;

export function loadMcp(): Promise<McpModule> {
  loading ??= typeof __MCP_CHUNK__ === "string" ? Promise.resolve().then(() => evaluateChunk<McpModule>(__MCP_CHUNK__ as string)) : import("../mcp/index.js");
  return loading;
}
