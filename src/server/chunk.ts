/**
 * Evaluates a chunk that scripts/build.mjs built beside the main bundle (the MCP client, the
 * tracer): read from the SEA's assets, or from the file next to the main bundle under plain
 * node, and run as a CommonJS module. Why chunks: esbuild's CommonJS bundle inlines dynamic
 * imports, so code that only some runs need would otherwise be parsed, and compiled into the
 * SEA's code cache, by every start of the bridge.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";

export function evaluateChunk<T>(name: string): T {
  let code: string | undefined;
  try {
    const sea = require("node:sea") as { isSea(): boolean; getAsset(key: string, encoding: string): string };
    if (sea.isSea()) code = sea.getAsset(name, "utf8");
  } catch {
    // Not a single executable (or a node without node:sea): the chunk is a file.
  }
  const filename = path.join(__dirname, name);
  code ??= readFileSync(filename, "utf8");
  const wrapper = vm.runInThisContext(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, { filename });
  const module = { exports: {} as T };
  wrapper(module.exports, require, module, filename, path.dirname(filename));
  return module.exports;
}
