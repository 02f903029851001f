/**
 * How deep a parsed JSON value nests, measured without recursion.
 *
 * Why: `JSON.parse` takes any depth, but almost everything done with a parsed value afterwards
 * recurses — `JSON.stringify` (logs, history, the session log, the provider request), zod,
 * structured clones — and a line of ~10 KB nested 5 000 deep overflows the stack there
 * (`RangeError: Maximum call stack size exceeded`). So every value that crosses a boundary (a
 * request frame on arrival, a tool call's arguments from the model) is measured here first and
 * refused above `MAX_JSON_DEPTH`, far below any depth that could overflow. (A line read back
 * from a session log is measured on its bytes instead: agent/store/log-lines.ts `MAX_NESTING`.)
 *
 * @module
 */

/** Deepest nesting of objects and arrays accepted from a client or a model. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `value` nests objects/arrays more than `limit` levels deep (a scalar is depth 0,
 * `{}` and `[]` depth 1). Stops at the first path that goes too deep; iterative, so any depth
 * is safe to ask about.
 */
export function exceedsDepth(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return false;
  // Containers still to look into, each beside its depth: two parallel stacks, so a value
  // walked costs no record of its own, and an object's children are read by key, not copied
  // out (`Object.values`). Every request frame is walked on arrival.
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop()!;
    const depth = depths.pop()!;
    if (depth > limit) return true;
    const next = depth + 1;
    if (Array.isArray(v)) {
      for (const child of v) if (typeof child === "object" && child !== null) (values.push(child), depths.push(next));
    } else {
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        const child = (v as Record<string, unknown>)[key];
        if (typeof child === "object" && child !== null) (values.push(child), depths.push(next));
      }
    }
  }
  return false;
}
