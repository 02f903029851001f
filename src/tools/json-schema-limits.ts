/**
 * What keeps checking a value against a JSON Schema the bridge did not write (a client's
 * `outputSchema`, an MCP server's tool output schema) from holding the bridge's one thread:
 * `pattern`s run on re2js (linear time; ECMAScript-only syntax is refused when compiled), and
 * a schema whose references expand past `MAX_SCHEMA_EXPANSION` subschemas is refused before
 * Ajv compiles it.
 *
 * @module
 */
import type { JsonObject, JsonValue } from "../protocol/types.js";

/** Most subschemas one check may visit, references expanded (see `refExpansion`). */
export const MAX_SCHEMA_EXPANSION = 100_000;

type Re2Module = { RE2JS: { compile(regex: string): { matcher(input: string): { find(): boolean } } } };

/**
 * The Ajv options every check of a schema the bridge did not write is made with (structured
 * output's, MCP output schemas'): `pattern`s on re2js (the packages chunk's `re2js` module),
 * `format` an annotation (its expressions are the native engine's), every error reported, and no
 * schema a check refers to kept by the instance.
 */
export function checkerOptions(re2Module: unknown) {
  return { strict: false, validateFormats: false, allErrors: true, addUsedSchema: false, code: { regExp: re2RegExp(re2Module) } } as const;
}

/** Ajv's `code.regExp` on re2js. */
function re2RegExp(re2Module: unknown): ((pattern: string) => { test(s: string): boolean }) & { code: string } {
  const { RE2JS } = re2Module as Re2Module;
  return Object.assign(
    (pattern: string) => {
      const re = RE2JS.compile(pattern);
      // Ajv keys compiled patterns by `toString()`: each must name its own source, or every
      // pattern would share the first one compiled (the meta-schema's).
      return { test: (s: string) => re.matcher(s).find(), toString: () => `re2js:${pattern}` };
    },
    { code: "re2js" },
  );
}

/**
 * How many subschemas checking one value may visit, `$ref`s expanded: a schema of a few
 * kilobytes whose definitions each refer to the next one twice (`anyOf: [{$ref: b}, {$ref: b}]`)
 * takes 2^n steps to check, all on the bridge's one thread. A reference back into the schema
 * being expanded (recursion) counts once: it only goes on as deep as the value does. Only local
 * references are taken (`#`, `#/json/pointer`, `#anchor`): nothing is fetched, and the count
 * must see every target.
 */
export function refExpansion(root: JsonObject, fail: (message: string) => Error): number {
  const anchors = new Map<string, JsonValue>();
  const collect = (node: JsonValue): void => {
    if (Array.isArray(node)) node.forEach(collect);
    else if (node !== null && typeof node === "object") {
      for (const key of ["$anchor", "$dynamicAnchor"]) if (typeof node[key] === "string") anchors.set(node[key] as string, node);
      Object.values(node).forEach(collect);
    }
  };
  collect(root);
  const resolve = (ref: string): JsonValue => {
    if (ref === "#") return root;
    if (!ref.startsWith("#/")) {
      const anchored = ref.startsWith("#") ? anchors.get(ref.slice(1)) : undefined;
      if (anchored === undefined) throw fail(`'$ref: ${ref}': only local references (#, #/pointer, #anchor) are supported`);
      return anchored;
    }
    let node: JsonValue | undefined = root;
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      node = node !== null && typeof node === "object" ? (node as Record<string, JsonValue>)[key] : undefined;
    }
    if (node === undefined) throw fail(`can't resolve reference ${ref}`);
    return node;
  };
  const memo = new Map<JsonValue, number>();
  const expanding = new Set<JsonValue>();
  const size = (node: JsonValue): number => {
    if (node === null || typeof node !== "object") return 1;
    const known = memo.get(node);
    if (known !== undefined) return known;
    if (expanding.has(node)) return 1;
    expanding.add(node);
    let total = 1;
    const parts = Array.isArray(node) ? node : Object.entries(node).filter(([k]) => k !== "$defs" && k !== "definitions" && k !== "enum" && k !== "const").map(([, v]) => v);
    for (const part of parts) total = Math.min(total + size(part), MAX_SCHEMA_EXPANSION + 1);
    if (!Array.isArray(node)) {
      for (const key of ["$ref", "$dynamicRef"]) {
        const ref = node[key];
        if (typeof ref === "string") total = Math.min(total + size(resolve(ref)), MAX_SCHEMA_EXPANSION + 1);
      }
    }
    expanding.delete(node);
    memo.set(node, total);
    return total;
  };
  return size(root);
}

/**
 * Why checking values against `root` could hold the thread (its references expand past
 * `MAX_SCHEMA_EXPANSION` subschemas), or `undefined`; throws `fail`'s error as `refExpansion` does.
 */
export function expansionProblem(root: JsonObject, fail: (message: string) => Error): string | undefined {
  return refExpansion(root, fail) > MAX_SCHEMA_EXPANSION ? `its references expand to more than ${MAX_SCHEMA_EXPANSION} subschemas (checking a value could take exponential time)` : undefined;
}
