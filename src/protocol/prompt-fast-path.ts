/**
 * A zod-free check of `session/prompt` params, for the common case only.
 *
 * Why: every prompt's params are checked before its turn starts, and zod's object, array and
 * string checks were ~6% of a one-chunk turn's CPU in its profile (bench/README.md, "Issue 34,
 * round 4"). As with `initialize` (initialize-fast-path.ts), this check accepts only params
 * that are plainly valid and returns them as the schema would; for anything else it returns
 * `undefined` and the caller validates with `sessionPromptParamsSchema` (zod), which stays the
 * definition of what is valid and the author of every error message. So it may be stricter than
 * the schema, never looser: test/protocol/prompt-fast-path.test.ts checks, over arbitrary
 * inputs, that whatever it accepts the schema accepts too, with the same result.
 *
 * @module
 */
import { SESSION_ID_PATTERN } from "./sessions-types.js";
import type { SessionPromptParams } from "./types.js";

/** `params` as `SessionPromptParams` when they are plainly valid; `undefined`: ask the schema. */
export function plainPromptParams(params: Record<string, unknown>): SessionPromptParams | undefined {
  const { sessionId, contentBlocks } = params;
  if (typeof sessionId !== "string" || !SESSION_ID_PATTERN.test(sessionId) || sessionId === "." || sessionId === "..") return undefined;
  if (!Array.isArray(contentBlocks) || contentBlocks.length === 0) return undefined;
  // Any other key (a structured turn, a budget, a trace parent, an unknown one) is for the
  // schema to check, and to strip when unknown.
  if (!onlyKeys(params, "sessionId", "contentBlocks")) return undefined;
  for (const block of contentBlocks as unknown[]) {
    if (typeof block !== "object" || block === null || Array.isArray(block)) return undefined;
    const { type, text } = block as Record<string, unknown>;
    if (type !== "text" || typeof text !== "string" || !onlyKeys(block, "type", "text")) return undefined;
  }
  // Exactly what zod's output would hold, so the parsed params themselves are the result: a
  // frame's params are its request's alone, nothing else holds them.
  return params as unknown as SessionPromptParams;
}

/** Whether `value` has no enumerable key but `a` and `b` (read without copying its keys out). */
function onlyKeys(value: object, a: string, b: string): boolean {
  for (const key in value) if (key !== a && key !== b) return false;
  return true;
}
