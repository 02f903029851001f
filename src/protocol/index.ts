/**
 * The harness-bridge wire protocol: types, error codes and param schemas.
 *
 * @module
 */
export * from "./types.js";
export * from "./methods.js";
export * from "./sessions-types.js";
export * from "./output-types.js";
export * from "./compaction-types.js";
export * from "./turn-control-types.js";
export * from "./checkpoint-types.js";
export * from "./mcp-types.js";
export * from "./errors.js";
