/**
 * The agent half of the bridge (runtime, agent loop, durable store, built-in tools), loaded on
 * demand.
 *
 * Why: start-up is measured from spawn to the `initialize` response (bench/run.py), and
 * `initialize` needs none of this: it validates its params and creates the provider. Loading
 * these modules eagerly would put node:child_process, node:crypto, node:fs/promises and the
 * tools' own code on the start-up path (what that costs: bench/README.md, "Why the code does
 * this"). The bundle is CommonJS (the SEA runs one
 * file), and esbuild turns each dynamic `import()` below into a deferred init call, so nothing
 * here is evaluated until `loadAgentModules()` runs. The server calls it right after the
 * `initialize` response is written, so the first prompt rarely waits for it.
 *
 * Nothing reachable from the start-up path may import these modules statically, or their
 * evaluation moves back to start-up (bench/run.py's cold-start ratio shows it).
 *
 * @module
 */
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
  loading ??= Promise.all([import("../agent/runtime.js"), import("../agent/store/index.js"), import("../tools/registry.js"), import("../agent/final-answer.js")]).then(
    ([runtime, store, tools, output]) => ({ runtime, store, tools, output }),
  );
  return loading;
}
