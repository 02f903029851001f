/**
 * How a tool's `outputSchema` checks its structured results: compiled when the tool's first
 * result is checked, not when the server lists it, each by a validator of its own.
 *
 * Invariants, and why:
 * - Listing compiles nothing. The SDK's default compiles every listed tool's output schema at
 *   every `tools/list` into one shared Ajv instance, whose cache keeps each compiled schema for
 *   the life of the process: a server that lists many tools with output schemas and sends
 *   `tools/list_changed` in a loop grew the bridge's memory and held its main thread without
 *   bound, and one tool's invalid schema (a `$ref` to nothing) failed the server's whole start.
 * - A schema that cannot be compiled, or is too big, fails the calls of its own tool only, with
 *   the reason (the SDK turns a throwing validator into the call's error); the other tools run.
 * - A compiled validator is held by the SDK's per-tool cache, which the next listing replaces:
 *   nothing outlives the tools list that named it.
 *
 * @module
 */
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import { MAX_SCHEMA_BYTES } from "./names.js";

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
  try {
    if (Buffer.byteLength(JSON.stringify(schema) ?? "") > MAX_SCHEMA_BYTES) return new Error(`the tool's output schema is larger than ${MAX_SCHEMA_BYTES} bytes`);
    // An instance per schema: its cache goes with this validator.
    return new AjvJsonSchemaValidator().getValidator<T>(schema);
  } catch (error) {
    return new Error(`the tool's output schema cannot be used: ${error instanceof Error ? error.message : String(error)}`);
  }
}
