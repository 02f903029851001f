/**
 * The npm packages of the tools and of structured output: re2js (grep's RE2 patterns, the output
 * schema's `pattern`s), ignore and tinyglobby (the walk's `.gitignore` rules), picomatch (glob),
 * Ajv (output schemas). A chunk of its own in the single executable (scripts/build.mjs,
 * `packages.cjs`, evaluated by server/chunk.ts on the first use of any of them), so that the main
 * bundle, whose code cache every start deserializes, holds none of them; load it through
 * packages-loader.ts, never statically (test/startup-imports.test.ts checks the bundle).
 *
 * @module
 */
import ignore from "ignore";

export { ignore };
export * as ajv2020 from "ajv/dist/2020.js";
export * as picomatch from "picomatch";
export * as re2js from "re2js";
export * as tinyglobby from "tinyglobby";
