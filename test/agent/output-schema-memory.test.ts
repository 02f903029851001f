/**
 * Structured output's compiled schemas (src/agent/final-answer.ts): what a prompt's schema
 * leaves behind once its turn is over. A batch job sends many distinct schemas to one bridge;
 * each must be freed with its contract, or memory grows with every prompt.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it, vi } from "vitest";

/** Every pattern compiled for a check, weakly: whether anything still holds it once its contract is dropped. */
const compiled: WeakRef<object>[] = [];

vi.mock("../../src/tools/packages-loader.js", async () => {
  const packages = await import("../../src/tools/packages.js");
  const { RE2JS } = packages.re2js as unknown as { RE2JS: { compile(pattern: string): object } };
  const compile = (pattern: string) => {
    const re = RE2JS.compile(pattern);
    compiled.push(new WeakRef(re));
    return re;
  };
  const re2js = { ...packages.re2js, RE2JS: new Proxy(RE2JS, { get: (target, key) => (key === "compile" ? compile : Reflect.get(target, key)) }) };
  const loaded = Promise.resolve({ ...packages, re2js });
  return { loadPackages: () => loaded };
});

const { compileOutputSchema } = await import("../../src/agent/final-answer.js");

const schemaWithPattern = (n: number) => ({ type: "object", properties: { id: { type: "string", pattern: `^id-${n}-[a-z]+$` } }, required: ["id"] });

describe("a prompt's output schema", () => {
  it("checks an answer against the schema's patterns", async () => {
    const contract = await compileOutputSchema(schemaWithPattern(0));
    expect(contract.check({ id: "id-0-abc" })).toEqual({ ok: true, value: { id: "id-0-abc" } });
    expect(contract.check({ id: "id-0-ABC" })).toMatchObject({ ok: false, problem: expect.stringContaining("must match pattern") });
  });

  it("is held by its contract only: the compiled patterns of schemas whose turns are over are freed", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const from = compiled.length;
    await (async () => {
      for (let n = 1; n <= 50; n++) expect((await compileOutputSchema(schemaWithPattern(n))).check({ id: `id-${n}-x` })).toMatchObject({ ok: true });
    })();
    expect(compiled.length - from).toBeGreaterThanOrEqual(50);
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(compiled.slice(from).filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });
});
