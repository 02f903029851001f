/**
 * Which tools a session is offered, decided here only: a top-level session gets the runtime's
 * tools and then the MCP servers' of the moment (`moreTools`, asked anew at every turn, since
 * their set changes with `tools/list_changed`); `task` only where a subagent may still start;
 * and a structured turn's requests add `final_answer`. A turn (turn-runner.ts), each of its model
 * requests (loop.ts) and `session/compact`'s summary request all take their set from here; the
 * summary's must be a top-level turn's, or the provider's prefix cache would not serve it.
 *
 * @module
 */
import type { ToolSpec } from "../providers/types.js";
import type { Tool } from "../tools/types.js";
import type { OutputContract } from "./final-answer.js";
import type { RuntimeOptions } from "./runtime-options.js";

/**
 * The tools of a top-level turn starting now: the runtime's, then `moreTools`'. Without
 * `moreTools` they are returned as they are, not in a promise, so that a turn starts without
 * waiting a tick.
 */
export function topLevelTools({ tools, moreTools }: Pick<RuntimeOptions, "tools" | "moreTools">): Tool[] | Promise<Tool[]> {
  return moreTools ? moreTools().then((more) => [...tools, ...more]) : tools;
}

/** Whether a session at `depth` (0: top level) may start subagents: below `subagentDepth`. */
export function canDelegate(depth: number, subagentDepth: number): boolean {
  return depth < subagentDepth;
}

/** Of `tools`, those a session at `depth` is offered: `task` only where it may start a subagent. */
export function toolsAtDepth(tools: Tool[], depth: number, subagentDepth: number): Tool[] {
  return canDelegate(depth, subagentDepth) ? tools : tools.filter((t) => t.name !== "task");
}

/**
 * A set of tools, by name, as a turn at `depth` is offered them (`toolsAtDepth`): made once per
 * set and depth, not per turn. The runtime's set is one array for its life; an MCP turn's is a
 * new array each turn (`topLevelTools`), so its entry goes with it (a WeakMap's).
 */
export function toolsByName(tools: Tool[], depth: number, subagentDepth: number): ReadonlyMap<string, Tool> {
  let byDepth = byNameCache.get(tools);
  if (!byDepth) byNameCache.set(tools, (byDepth = new Map()));
  const delegates = canDelegate(depth, subagentDepth);
  let byName = byDepth.get(delegates);
  if (!byName) byDepth.set(delegates, (byName = new Map(toolsAtDepth(tools, depth, subagentDepth).map((t) => [t.name, t]))));
  return byName;
}
const byNameCache = new WeakMap<Tool[], Map<boolean, ReadonlyMap<string, Tool>>>();

/** What a model request says of each tool. */
export function toolSpecs(tools: Iterable<Tool>): ToolSpec[] {
  return Array.from(tools, ({ name, description, parameters }) => ({ name, description, parameters }));
}

/**
 * The tools every model request of a turn offers (the set is fixed for the turn): `final_answer`
 * last in a structured turn. The specs of a map of tools (`toolsByName`, never changed once
 * made) are made once and shared by every request offering it: nothing changes a request's specs.
 */
export function requestTools(tools: ReadonlyMap<string, Tool>, output?: OutputContract): ToolSpec[] {
  let specs = specsCache.get(tools);
  if (!specs) specsCache.set(tools, (specs = toolSpecs(tools.values())));
  return output ? [...specs, output.tool] : specs;
}
const specsCache = new WeakMap<ReadonlyMap<string, Tool>, ToolSpec[]>();
