/**
 * Loads the session viewer (src/viewer/index.ts) — only for `harness-bridge view`.
 *
 * Invariant: `--stdio` never evaluates the viewer. As with the MCP client (server/mcp-loader.ts,
 * whose chunk evaluation this shares), scripts/build.mjs builds the viewer into a chunk of its
 * own, `build/viewer.cjs`, embedded in the SEA as an asset of that name; `__VIEWER_CHUNK__`
 * names it. Run from source (the tests), it is undefined and the module is imported as usual.
 *
 * @module
 */
import { evaluateChunk } from "./server/mcp-loader.js";

export type ViewerModule = typeof import("./viewer/index.js");

/** Set by scripts/build.mjs to the chunk's file (and asset) name; undefined when run from source. */
declare const __VIEWER_CHUNK__: string | undefined;

export function loadViewer(): Promise<ViewerModule> {
  return typeof __VIEWER_CHUNK__ === "string"
    ? Promise.resolve().then(() => evaluateChunk(__VIEWER_CHUNK__ as string) as unknown as ViewerModule)
    : import("./viewer/index.js");
}
