/**
 * A tool's output schema as the bridge checks it (src/mcp/output-validator.ts): what a dropped
 * listing's compiled schemas leave behind, and what a schema re2js cannot run answers.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { beforeAll, describe, expect, it } from "vitest";
import { LazyOutputValidator, ready } from "../../src/mcp/output-validator.js";

/** Every pattern compiled for a check, weakly: whether anything still holds it once its validator is dropped. */
const compiled: WeakRef<object>[] = [];

beforeAll(async () => {
  await ready(async () => {
    const re2js = (await import("re2js")) as { RE2JS: { compile(pattern: string): object } };
    const compile = (pattern: string) => {
      const re = re2js.RE2JS.compile(pattern);
      compiled.push(new WeakRef(re));
      return re;
    };
    return { RE2JS: new Proxy(re2js.RE2JS, { get: (target, key) => (key === "compile" ? compile : Reflect.get(target, key)) }) };
  });
});

const schemaWithPattern = (n: number) => ({ type: "object", properties: { id: { type: "string", pattern: `^id-${n}-[a-z]+$` } } });

describe("a tool's output schema", () => {
  it("checks a structured result against the schema's patterns", () => {
    const check = new LazyOutputValidator().getValidator(schemaWithPattern(0));
    expect(check({ id: "id-0-abc" })).toMatchObject({ valid: true });
    expect(check({ id: "id-0-ABC" })).toMatchObject({ valid: false, errorMessage: expect.stringContaining("must match pattern") });
  });

  it("is held by its validator only: the compiled patterns of a listing's schemas are freed once a relisting drops its validators", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const from = compiled.length;
    (() => {
      const validators = new LazyOutputValidator();
      for (let n = 1; n <= 50; n++) expect(validators.getValidator(schemaWithPattern(n))({ id: `id-${n}-x` })).toMatchObject({ valid: true });
    })();
    expect(compiled.length - from).toBeGreaterThanOrEqual(50);
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(compiled.slice(from).filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });

  it("with a pattern re2js cannot run (a lookahead, a backreference): each call of that tool fails saying why, never a check skipped", () => {
    for (const pattern of ["^(?=a)a$", "^(a)\\1$"]) {
      const check = new LazyOutputValidator().getValidator({ type: "object", properties: { s: { type: "string", pattern } } });
      for (let call = 0; call < 2; call++) expect(() => check({ s: "a" })).toThrow(/^the tool's output schema cannot be used: .+/);
    }
  });
});
