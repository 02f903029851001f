/**
 * Evaluates a chunk that scripts/build.mjs built beside the main bundle (the MCP client, the
 * tracer, the viewer, the provider's HTTP client, the request schemas; in the single executable
 * the main bundle itself too, from src/sea-main.ts): read from the SEA's
 * assets, or from the file next to the main bundle under plain node, and run as a CommonJS
 * module. Why chunks: esbuild's CommonJS bundle inlines dynamic imports, so code that only some
 * runs need, or that nothing needs before the `initialize` response, would otherwise be in the
 * main bundle, whose code cache every start of the bridge deserializes.
 *
 * A chunk file is one function expression, `(function (exports, require, module, __filename,
 * __dirname) {…})`: scripts/build.mjs wraps esbuild's output so, and makes each chunk's V8 code
 * cache from those same bytes with the embedded node (scripts/chunk-cache.cjs). In the single
 * executable the cache is the asset `<chunk>.cache`; V8 accepts it only for the same source
 * length, V8 version and flags, so the chunk's functions (those its evaluation compiled at build
 * time) are not compiled again. Without the asset (plain node, whose V8 may differ) the chunk is
 * compiled from its source, the same way. The build makes every chunk ASCII only (it fails
 * otherwise), so the SEA's asset is read in place and decoded as latin1: the same string as
 * UTF-8 would give, without copying the asset first or decoding UTF-8.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Script } from "node:vm";

type Sea = { isSea(): boolean; getRawAsset(key: string): ArrayBuffer };
type ChunkFunction = (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;

function seaAssets(): Sea | undefined {
  try {
    const sea = require("node:sea") as Sea;
    return sea.isSea() ? sea : undefined;
  } catch {
    return undefined; // A node without node:sea: not a single executable.
  }
}

/**
 * Evaluates the chunk `name` and returns its exports. `requireFor` is the `require` the chunk
 * gets: this bundle's own (built-in modules) unless the chunk asks for more (agent-modules.ts).
 */
export function evaluateChunk<T>(name: string, requireFor: (id: string) => unknown = require): T {
  const sea = seaAssets();
  const filename = join(__dirname, name);
  // The raw assets are the executable's own read-only memory: read here, never written.
  const code = sea ? Buffer.from(sea.getRawAsset(name)).toString("latin1") : readFileSync(filename, "utf8");
  let cachedData: Uint8Array | undefined;
  try {
    if (sea) cachedData = new Uint8Array(sea.getRawAsset(`${name}.cache`));
  } catch {
    // No cache for this chunk (a build that could not make one): compiled from source.
  }
  const script = new Script(code, { filename, cachedData });
  // A rejected cache costs start-up time, not correctness; say so once, as node does for the blob's.
  if (script.cachedDataRejected) process.emitWarning(`the code cache of ${name} was rejected; it is compiled from source`);
  const module = { exports: {} as T };
  (script.runInThisContext() as ChunkFunction)(module.exports, requireFor as NodeJS.Require, module, filename, dirname(filename));
  return module.exports;
}
