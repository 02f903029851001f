/**
 * The single executable's entry (scripts/build.mjs bundles it as the SEA's `main`): evaluates the
 * main bundle, embedded as the asset `harness-bridge.sea.cjs`, the way chunks are evaluated
 * (server/chunk.ts), with its code cache. Node's own SEA code cache holds only what compiling the
 * bundle compiles eagerly; this one is made by the build after a start-up run of the bundle up to
 * its `initialize` response (scripts/start-up-cache.cjs), so the functions the start-up path calls
 * come compiled. `node build/harness-bridge.cjs` runs the same bundle without this entry.
 *
 * @module
 */
import { evaluateChunk } from "./server/chunk.js";

evaluateChunk("harness-bridge.sea.cjs");
