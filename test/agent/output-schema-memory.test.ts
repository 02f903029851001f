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
/** The Ajvs that hold the meta-schemas (the one checker shared by all prompts), with the schemas and references each keeps. */
const checkers: Array<{ schemas: object; refs: object }> = [];

vi.mock("../../src/tools/packages-loader.js", async () => {
  const packages = await import("../../src/tools/packages.js");
  const { RE2JS } = packages.re2js as unknown as { RE2JS: { compile(pattern: string): object } };
  const compile = (pattern: string) => {
    const re = RE2JS.compile(pattern);
    compiled.push(new WeakRef(re));
    return re;
  };
  const re2js = { ...packages.re2js, RE2JS: new Proxy(RE2JS, { get: (target, key) => (key === "compile" ? compile : Reflect.get(target, key)) }) };
  const mod = packages.ajv2020 as unknown as { default: new (...args: unknown[]) => { schemas: object; refs: object } };
  const Ajv = new Proxy(mod.default, {
    construct(target, args) {
      const ajv = new target(...args);
      if ((args[0] as { meta?: boolean } | undefined)?.meta !== false) checkers.push(ajv);
      return ajv;
    },
  });
  const loaded = Promise.resolve({ ...packages, re2js, ajv2020: { ...mod, default: Ajv } });
  return { loadPackages: () => loaded };
});

const { OutputSchemaError, compileOutputSchema } = await import("../../src/agent/final-answer.js");

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

  it("takes the 2020-12 dialect's $schema only: any other value is refused, naming it, and leaves nothing behind in the checker shared by all prompts", async () => {
    const dialect = "https://json-schema.org/draft/2020-12/schema";
    for (const $schema of [dialect, `${dialect}#`]) expect((await compileOutputSchema({ $schema, type: "string" })).check({ value: "x" })).toMatchObject({ ok: true });
    const held = () => checkers.reduce((n, ajv) => n + Object.keys(ajv.schemas).length + Object.keys(ajv.refs).length, 0);
    const before = held();
    // A fragment of a meta-schema that is itself a schema, in as many spellings as percent-encoding allows.
    const spellings = Array.from({ length: 40 }, (_, n) => "properties/not".replace(/[a-z]/g, (c, i) => ((n >> i) & 1 ? `%${c.charCodeAt(0).toString(16)}` : c)));
    for (const spelling of spellings) {
      const $schema = `https://json-schema.org/draft/2020-12/meta/applicator#/${spelling}`;
      const refused = compileOutputSchema({ $schema, type: "object" });
      await expect(refused).rejects.toThrow(OutputSchemaError);
      await expect(refused).rejects.toThrow(`$schema is ${JSON.stringify($schema)}: only the JSON Schema 2020-12 dialect is accepted`);
    }
    await expect(compileOutputSchema({ $schema: "http://json-schema.org/draft-07/schema#", type: "object" })).rejects.toThrow('$schema is "http://json-schema.org/draft-07/schema#"');
    await expect(compileOutputSchema({ $schema: 7, type: "object" })).rejects.toThrow("$schema is a number");
    expect(checkers).toHaveLength(1);
    expect(held()).toBe(before);
  });
});
