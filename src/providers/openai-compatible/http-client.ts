/**
 * What the provider takes from its npm dependencies: undici's `fetch` and agents, and the SSE
 * parser. A chunk of its own in the single executable (scripts/build.mjs, `http-client.cjs`,
 * evaluated by server/chunk.ts on the first model request): undici is most of the bundle's size,
 * and nothing before the `initialize` response needs it. Only provider.ts loads this module, and
 * nothing of it may be imported statically from the main bundle, or undici goes back into it
 * (test/startup-imports.test.ts checks the bundle).
 *
 * @module
 */
export { Agent, EnvHttpProxyAgent, fetch } from "undici";
export { createParser } from "eventsource-parser";
