/**
 * The zod-free `session/prompt` check may be stricter than the schema, never looser: whatever it
 * accepts, `sessionPromptParamsSchema` accepts with the same result.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { plainPromptParams } from "../../src/protocol/prompt-fast-path.js";
import { sessionPromptParamsSchema } from "../../src/protocol/schemas.js";

// Values near every field's edge, and some of every JSON type.
const anyValue = fc.oneof(
  fc.constantFrom("", "x", "s1", ".", "..", "a/b", "x".repeat(128), "x".repeat(129), "text", 0, 1, -1, 1.5, null, true, false),
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(null)), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const block = fc.oneof(
  fc.record({ type: fc.constantFrom("text", "text", "image", 1), text: fc.oneof(fc.string(), fc.integer()), extra: anyValue }, { requiredKeys: [] }),
  anyValue,
);
const params = fc.record(
  {
    sessionId: fc.oneof(fc.constantFrom("s1", "a.b:c-d_e", ".", "..", "", "x".repeat(128), "x".repeat(129), "a b", "é"), anyValue),
    contentBlocks: fc.oneof(fc.array(block, { maxLength: 3 }), anyValue),
    outputSchema: anyValue,
    maxCostUsd: anyValue,
    traceparent: anyValue,
    extra: anyValue,
    __proto__: anyValue,
  },
  { requiredKeys: [] },
);
// Mostly-valid params, so that the accepting branch is exercised as well.
const plausible = fc
  .record({
    sessionId: fc.constantFrom("s1", "s1", "bench", "x".repeat(128), ".", ""),
    contentBlocks: fc.array(fc.record({ type: fc.constantFrom("text", "text", "text", "image"), text: fc.oneof(fc.string(), fc.constant(1)) }), { maxLength: 3 }),
  })
  .chain((p) => fc.record({ extra: anyValue }, { requiredKeys: [] }).map((more) => ({ ...p, ...more })));

describe("plainPromptParams", () => {
  it("accepts only what the schema accepts, with the same result", () => {
    fc.assert(
      fc.property(fc.oneof(params, { arbitrary: plausible, weight: 3 }), (raw) => {
        // The request's params, as the transport hands them over: parsed JSON.
        const input = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
        const fast = plainPromptParams(input);
        if (fast === undefined) return;
        const parsed = sessionPromptParamsSchema.safeParse(input);
        expect(parsed.success).toBe(true);
        expect(fast).toStrictEqual(parsed.data);
      }),
      { numRuns: 5_000 },
    );
  });

  it("accepts the params clients send, and leaves the rarer ones to the schema", () => {
    const sent = { sessionId: "s1", contentBlocks: [{ type: "text", text: "hi" }] };
    expect(plainPromptParams(sent)).toStrictEqual(sent);
    expect(plainPromptParams({ ...sent, maxCostUsd: 1 })).toBeUndefined();
    expect(plainPromptParams({ ...sent, outputSchema: {} })).toBeUndefined();
    expect(plainPromptParams({ ...sent, traceparent: "00-x" })).toBeUndefined();
    // Unknown keys are the schema's to strip: the fast path hands back the params themselves.
    expect(plainPromptParams({ ...sent, extra: 1 })).toBeUndefined();
    expect(plainPromptParams({ ...sent, contentBlocks: [{ type: "text", text: "hi", extra: 1 }] })).toBeUndefined();
  });
});
