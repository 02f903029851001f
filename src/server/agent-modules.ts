/**
 * The agent half of the bridge (runtime, agent loop, durable store, built-in tools), loaded on
 * demand.
 *
 * Why: start-up is measured from spawn to the `initialize` response (bench/run.py), and
 * `initialize` needs none of this: it validates its params and creates the provider. Loading
 * these modules eagerly would put node:child_process, node:crypto, node:fs/promises and the
 * tools' own code on the start-up path (what that costs: bench/README.md, "Why the code does
 * this"). The server calls `loadAgentModules()` right after the `initialize` response is
 * written, so the first prompt rarely waits for it.
 *
 * Built, they are a chunk of their own, `agent.cjs` (scripts/build.mjs, entry agent-chunk.ts):
 * in the main bundle even code that is never evaluated at start-up costs every start, since its
 * functions are in the main bundle's code cache, which every start deserializes (bench/README.md,
 * "Cold start, round 7"). Unlike the other chunks, this one shares modules with the main bundle
 * (the protocol's errors, the sandbox's probe, the redactor...): those stay out of the chunk,
 * which asks for them as `harness-main:<source path>`, and `SHARED_MODULES` (shared-modules.ts,
 * which the build fills in) hands it the main bundle's own instances, so there is one of each
 * class and of each module's state. Run from source (the tests), `__AGENT_CHUNK__` is undefined
 * and the modules are imported as usual.
 *
 * Nothing reachable from the start-up path may import these modules statically, or they move
 * back into the main bundle (test/startup-imports.test.ts and bench/run.py's cold start show it).
 *
 * @module
 */
import { evaluateChunk } from "./chunk.js";
import { SHARED_MODULES, SHARED_PREFIX } from "./shared-modules.js";

/** Set by scripts/build.mjs to the agent chunk's file (and asset) name; undefined when run from source. */
declare const __AGENT_CHUNK__: string | undefined;

export interface AgentModules {
  runtime: typeof import("../agent/runtime.js");
  store: typeof import("../agent/store/index.js");
  tools: typeof import("../tools/registry.js");
  /** Structured output; Ajv itself loads on the first prompt with an `outputSchema`. */
  output: typeof import("../agent/final-answer.js");
}

let loading: Promise<AgentModules> | undefined;

/** Loads (once) and returns the agent modules. */
export function loadAgentModules(): Promise<AgentModules> {
  loading ??= typeof __AGENT_CHUNK__ === "string" ? loadAgentChunk(__AGENT_CHUNK__) : importAgentModules();
  return loading;
}

function importAgentModules(): Promise<AgentModules> {
  return Promise.all([import("../agent/runtime.js"), import("../agent/store/index.js"), import("../tools/registry.js"), import("../agent/final-answer.js")]).then(
    ([runtime, store, tools, output]) => ({ runtime, store, tools, output }),
  );
}

/**
 * Evaluates the agent chunk once every module it shares with the main bundle is initialised (a
 * shared module the start-up path did not need is initialised here, as its first import would).
 */
async function loadAgentChunk(name: string): Promise<AgentModules> {
  const keys = Object.keys(SHARED_MODULES);
  const namespaces = await Promise.all(keys.map((key) => SHARED_MODULES[key]!()));
  const shared = new Map(keys.map((key, i) => [SHARED_PREFIX + key, namespaces[i]]));
  return evaluateChunk<AgentModules>(name, (id) => {
    if (shared.has(id)) return shared.get(id);
    // A name the build did not list: a build defect, said as such rather than a second copy.
    if (id.startsWith(SHARED_PREFIX)) throw new Error(`the agent chunk asks for ${id}, which the main bundle does not share`);
    return require(id);
  });
}
