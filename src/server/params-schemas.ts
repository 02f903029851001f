/**
 * A method's params checked against its zod schema (protocol/schemas.ts). The schemas, zod with
 * them, are their own chunk, loaded once `initialize` has answered (or by an `initialize` that
 * needs them), never on the start-up path; a refusal is one -32602 naming what is wrong.
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { JsonObject } from "../protocol/types.js";
import { evaluateChunk } from "./chunk.js";

/** Set by scripts/build.mjs to the schemas' chunk (zod with them); undefined when run from source. */
declare const __SCHEMAS_CHUNK__: string | undefined;

export type Schemas = typeof import("../protocol/schemas.js");
export type ParamsSchema = keyof Schemas & `${string}ParamsSchema`;
export type Params<K extends ParamsSchema> = ReturnType<Schemas[K]["parse"]>;

/** `params` checked against `schema`: parsed, or an -32602 naming what is wrong. */
export function checkParams<K extends ParamsSchema>(schemas: Schemas, schema: K, params: JsonObject | undefined): Params<K> {
  const parsed = schemas[schema].safeParse(params ?? {});
  if (!parsed.success) {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: ${schemas.describeIssues(parsed.error)}`, { kind: "invalid-params" });
  }
  return parsed.data as Params<K>;
}

/** The schemas of one server, loaded on first use. */
export class ParamsSchemas {
  private loading: Promise<Schemas> | undefined;
  /** The schemas, once `load` has resolved. */
  loaded: Schemas | undefined;

  /** zod and the schemas: loaded after `initialize` answered (or by an `initialize` that needs them), not at start-up. */
  load(): Promise<Schemas> {
    this.loading ??= (
      typeof __SCHEMAS_CHUNK__ === "string" ? Promise.resolve().then(() => evaluateChunk<Schemas>(__SCHEMAS_CHUNK__ as string)) : import("../protocol/schemas.js")
    ).then((schemas) => (this.loaded = schemas));
    return this.loading;
  }

  async validate<K extends ParamsSchema>(schema: K, params: JsonObject | undefined): Promise<Params<K>> {
    return checkParams(await this.load(), schema, params);
  }
}
