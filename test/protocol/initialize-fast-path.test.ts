/**
 * The zod-free `initialize` check may be stricter than the schema, never looser: whatever it
 * accepts, `initializeParamsSchema` accepts with the same result. Its fields are the schema's:
 * the field list below is read off the schema, so a field added to it is fuzzed here, and one
 * the fast path has no rule for (or a rule for a field the schema lacks) fails the first test.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { INITIALIZE_FIELD_RULES, plainInitializeParams } from "../../src/protocol/initialize-fast-path.js";
import { initializeParamsSchema } from "../../src/protocol/schemas.js";

// Values near every field's edge, and some of every JSON type.
const anyValue = fc.oneof(
  fc.constantFrom("", "x", "/tmp", "read-only", "workspace-write", "full", "Full", "bash", 0, 1, 2, -1, 1.5, 2 ** 53, 2 ** 53 - 1, null, true, false),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0),
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(null)), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const keys = Object.keys(initializeParamsSchema.shape);
const params = fc.record(
  {
    ...Object.fromEntries(keys.map((k) => [k, anyValue])),
    extra: anyValue,
    __proto__: anyValue,
  },
  { requiredKeys: [] },
);
// Mostly-valid params, so that the accepting branch is exercised as well.
const plausible = fc.record(
  {
    cwd: fc.constantFrom("/tmp", "/tmp", "/tmp", "", "."),
    provider: fc.constantFrom("scripted", "scripted", "deepseek", ""),
    model: fc.constantFrom("demo", "demo", "m", ""),
    maxTokens: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constant(1.5)),
    maxSteps: fc.oneof(fc.integer({ min: -2, max: 10 }), fc.constant(2 ** 53)),
    permissionMode: fc.constantFrom("read-only", "workspace-write", "full", "none"),
    tools: fc.array(fc.oneof(fc.constantFrom("bash", "grep"), fc.integer()), { maxLength: 3 }),
    instructions: fc.oneof(fc.string(), fc.integer()),
    protocolVersion: fc.constantFrom(1, 2, "1"),
    thinking: fc.constantFrom("enabled", "disabled", "off", 1),
    reasoningEffort: fc.oneof(fc.constantFrom("low", "high", "max", "", "hi gh", "x".repeat(33)), fc.string()),
    user: fc.oneof(fc.constantFrom("u-1", "", "a\nb", "é".repeat(257), "u".repeat(512)), fc.string()),
    toolChoice: fc.constantFrom("auto", "always", { name: "glob" }),
    firstTokenTimeoutMs: fc.constantFrom(0, 5, -1),
  },
  { requiredKeys: [] },
).map((p) => ({ cwd: "/tmp", provider: "scripted", model: "demo", ...p }));

describe("plainInitializeParams", () => {
  it("has a rule for every field of the schema, and for no other", () => {
    expect(Object.keys(INITIALIZE_FIELD_RULES)).toEqual(keys);
  });

  it("sends params with any value of a field it leaves to the schema to the schema", () => {
    const plain = { cwd: "/w", provider: "scripted", model: "demo" };
    const left = Object.entries(INITIALIZE_FIELD_RULES).filter(([, rule]) => rule === "schema").map(([name]) => name);
    expect(left.length).toBeGreaterThan(5);
    for (const name of left) expect(plainInitializeParams({ ...plain, [name]: 1 })).toBeUndefined();
  });

  it("accepts only what the schema accepts, with the same result", () => {
    fc.assert(
      fc.property(fc.oneof(params, { arbitrary: plausible, weight: 3 }), (raw) => {
        // The request's params, as the transport hands them over: parsed JSON.
        const input = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
        const fast = plainInitializeParams(input);
        if (fast === undefined) return;
        const parsed = initializeParamsSchema.safeParse(input);
        expect(parsed.success).toBe(true);
        expect(fast).toEqual(parsed.data);
      }),
      { numRuns: 5_000 },
    );
  });

  it("accepts the params clients send", () => {
    expect(plainInitializeParams({ cwd: "/w", provider: "scripted", model: "demo" })).toEqual({ cwd: "/w", provider: "scripted", model: "demo" });
    const full = {
      cwd: "/w", provider: "deepseek", model: "m", maxTokens: 8, maxSteps: 3, permissionMode: "read-only", tools: ["grep"], instructions: "", protocolVersion: 1,
      thinking: "enabled", reasoningEffort: "high", user: "tenant-1",
    };
    expect(plainInitializeParams(full)).toEqual(full);
  });
});
