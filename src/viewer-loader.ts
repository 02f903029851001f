/**
 * Loads the session viewer (src/viewer/index.ts) — only for `harness-bridge view`.
 *
 * Invariant: `--stdio` never evaluates the viewer. As with the MCP client (server/mcp-loader.ts;
 * both evaluate their chunk with server/chunk.ts), scripts/build.mjs builds the viewer into a chunk of its
 * own, `build/viewer.cjs`, embedded in the SEA as an asset of that name; `__VIEWER_CHUNK__`
 * names it. Run from source (the tests), it is undefined and the module is imported as usual.
 *
 * @module
 */
import { evaluateChunk } from "./server/chunk.js";

export type ViewerModule = typeof import("./viewer/index.js");

/** Set by scripts/build.mjs to the chunk's file (and asset) name; undefined when run from source. */
declare const __VIEWER_CHUNK__: string | undefined;

export function loadViewer(): Promise<ViewerModule> {
  return typeof __VIEWER_CHUNK__ === "string"
    ? Promise.resolve().then(() => evaluateChunk<ViewerModule>(__VIEWER_CHUNK__ as string))
    : import("./viewer/index.js");
}
