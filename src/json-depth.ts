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
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    const next = depth + 1;
    if (next > limit) return true;
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const child of children) if (typeof child === "object" && child !== null) stack.push({ value: child, depth: next });
  }
  return false;
}
