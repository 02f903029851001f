/**
 * How a tool's `outputSchema` checks its structured results: compiled when the tool's first
 * result is checked, not when the server lists it, in the SDK's dialect (Ajv's draft-07), with
 * the limits of tools/json-schema-limits.ts. The server writes both the schema and the value.
 *
 * Invariants, and why:
 * - Listing compiles nothing, and a compiled schema lives as long as the SDK's per-tool cache
 *   holds its validator (the next listing replaces it). The SDK's default compiles every listed
 *   tool's output schema at every `tools/list` into one shared Ajv instance, whose cache keeps
 *   each compiled schema for the life of the process: a server that lists many tools with
 *   output schemas and sends `tools/list_changed` in a loop grew the bridge's memory and held
 *   its main thread without bound, and one tool's invalid schema (a `$ref` to nothing) failed
 *   the server's whole start. Each schema is compiled by an Ajv of its own, dropped with its
 *   validator: an Ajv's code scope keeps every value its compiled code refers to (each
 *   `pattern`'s compiled expression among them) for the instance's life, whatever
 *   `removeSchema` drops, so one shared instance grew with every distinct pattern checked.
 * - A check cannot hold the bridge's one thread: `pattern`s run on re2js (a server's
 *   `^(a+)+$` against `aaa…!` took seconds per character more with the native engine, on the
 *   thread every session waits on), a schema whose references expand exponentially is
 *   refused, and `format` is not checked (its regular expressions are the native engine's).
 * - A schema that cannot be used, or is too big, fails the calls of its own tool only, with
 *   the reason (the SDK turns a throwing validator into the call's error); the other tools run.
 * - re2js is the packages chunk's, handed in by the bridge (this chunk holds no copy of it) and
 *   loaded by `ready()`: every call awaits it before the SDK can check a result.
 *
 * @module
 */
import { Ajv } from "ajv";
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import type { JsonObject } from "../protocol/types.js";
import { checkerOptions, expansionProblem } from "../tools/json-schema-limits.js";
import { MAX_SCHEMA_BYTES } from "./names.js";

/** The options of every schema's own Ajv, once re2js is loaded. */
let ajvOptions: ConstructorParameters<typeof Ajv>[0] | undefined;
let loading: Promise<void> | undefined;

/** Loads re2js (by `loadRe2`: the main bundle's packages chunk), which the checks compile with; resolves at once after the first time. */
export function ready(loadRe2: () => Promise<unknown>): Promise<void> {
  loading ??= loadRe2().then((re2js) => {
    ajvOptions = { ...checkerOptions(re2js), validateSchema: false };
  });
  return loading;
}

export class LazyOutputValidator implements jsonSchemaValidator {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let compiled: JsonSchemaValidator<T> | Error | undefined;
    return (input) => {
      compiled ??= compile<T>(schema);
      if (compiled instanceof Error) throw compiled;
      return compiled(input);
    };
  }
}

function compile<T>(schema: JsonSchemaType): JsonSchemaValidator<T> | Error {
  const unusable = (why: string) => new Error(`the tool's output schema cannot be used: ${why}`);
  if (!ajvOptions) return unusable("the validator is not loaded");
  try {
    const bytes = Buffer.byteLength(JSON.stringify(schema) ?? "");
    if (bytes > MAX_SCHEMA_BYTES) return unusable(`it is ${bytes} bytes of JSON, more than ${MAX_SCHEMA_BYTES}`);
    const expansion = expansionProblem(schema as JsonObject, (message) => new Error(message));
    if (expansion) return unusable(expansion);
    const checker = new Ajv(ajvOptions);
    const validate = checker.compile(schema);
    return (input) => {
      if (validate(input)) return { valid: true, data: input as T, errorMessage: undefined };
      return { valid: false, data: undefined, errorMessage: checker.errorsText(validate.errors) };
    };
  } catch (error) {
    return unusable(error instanceof Error ? error.message : String(error));
  }
}
