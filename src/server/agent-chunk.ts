/**
 * The agent chunk's entry (scripts/build.mjs builds it into `agent.cjs`): the agent modules, as
 * agent-modules.ts hands them to the server. Imported by nothing in the source.
 *
 * @module
 */
export * as runtime from "../agent/runtime.js";
export * as store from "../agent/store/index.js";
export * as tools from "../tools/registry.js";
export * as output from "../agent/final-answer.js";
