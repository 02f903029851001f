/**
 * The modules the main bundle shares with the agent chunk (agent-modules.ts): for each, keyed by
 * its source path, how to get the main bundle's own instance (its namespace object, initialised).
 *
 * Empty here: scripts/build.mjs replaces this file's contents, in the main bundle only, with one
 * entry per module the agent chunk imports that the main bundle holds, each a dynamic `import()`
 * (so a module that the start-up path does not evaluate is still not evaluated at start-up). Run
 * from source nothing reads it: the agent modules are imported as usual.
 *
 * @module
 */

/** How the agent chunk names a module of the main bundle: `harness-main:src/protocol/errors.ts`. */
export const SHARED_PREFIX = "harness-main:";

export const SHARED_MODULES: Record<string, () => Promise<unknown>> = {};
