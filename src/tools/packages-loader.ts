/**
 * Loads the tools' npm packages (packages.ts): in the single executable `__PACKAGES_CHUNK__`
 * names the chunk to evaluate (server/chunk.ts); run from source (the tests) it is undefined and
 * the module is imported.
 *
 * @module
 */
import { evaluateChunk } from "../server/chunk.js";

export type Packages = typeof import("./packages.js");

/** Set by scripts/build.mjs to the chunk's file (and asset) name; undefined when run from source. */
declare const __PACKAGES_CHUNK__: string | undefined;

let loading: Promise<Packages> | undefined;

export function loadPackages(): Promise<Packages> {
  loading ??= typeof __PACKAGES_CHUNK__ === "string" ? Promise.resolve().then(() => evaluateChunk<Packages>(__PACKAGES_CHUNK__ as string)) : import("./packages.js");
  return loading;
}
