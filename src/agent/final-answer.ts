/**
 * Structured output (PROTOCOL.md "Structured output"): `session/prompt.outputSchema` becomes the
 * parameters of a `final_answer` tool, offered for that turn only; the model answers by calling
 * it, and the value is validated with Ajv (JSON Schema 2020-12, Pydantic's dialect).
 *
 * - The schema is compiled when the prompt arrives: a schema Ajv refuses, or one larger than
 *   `MAX_OUTPUT_SCHEMA_BYTES`, is the request's -32602.
 * - An object schema (`type: "object"`) is the tool's parameters as it is; any other schema is
 *   wrapped as `{value: schema}` (chat completions tools take object parameters only) and the
 *   answer is the `value` argument. Validation always runs against the client's own schema.
 * - Ajv and re2js load on the first structured prompt only (cold start does not move). Ajv
 *   compiles validators with `new Function`, which the single executable allows. `pattern`
 *   and `patternProperties` run on re2js (linear time): a hostile pattern cannot hang the
 *   bridge; ECMAScript-only syntax (lookaround, backreferences) is refused with the schema.
 * - `format` is an annotation here (not checked): no format table ships in the binary.
 *
 * @module
 */
import type { JsonObject, JsonValue, ToolCallBlock } from "../protocol/index.js";
import { FINAL_ANSWER_TOOL, MAX_OUTPUT_ATTEMPTS, type OutputInvalidReason } from "../protocol/index.js";
import type { ToolSpec } from "../providers/types.js";
import type { ToolOutput } from "../tools/types.js";
import { checkerOptions, expansionProblem } from "../tools/json-schema-limits.js";
import { loadPackages } from "../tools/packages-loader.js";

/** Largest `outputSchema` accepted, as JSON. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024;
/** Validation errors quoted back to the model. */
const ERRORS_SHOWN = 5;

/** Thrown when `outputSchema` cannot be used; the message says why (the server adds the field name). */
export class OutputSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutputSchemaError";
  }
}

type Check = { ok: true; value: JsonValue } | { ok: false; problem: string };

/** A compiled `outputSchema`: the tool the model is offered, and the check of its answer. */
export interface OutputContract {
  readonly schema: JsonObject;
  readonly tool: ToolSpec;
  /** Checks the arguments of a `final_answer` call. */
  check(args: JsonObject): Check;
}

type AjvModule = typeof import("ajv/dist/2020.js");
type AjvClass = AjvModule["default"];
type Ajv = InstanceType<AjvClass>;
interface Engines {
  schemaChecker: Ajv;
  compiler: () => Ajv;
  /** The meta-schemas the checker holds (the 2020-12 dialect's), by id: the only `$schema` values taken. */
  metaSchemas: ReadonlySet<string>;
}
let engines: Promise<Engines> | undefined;

/**
 * Ajv, loaded once. Each schema is compiled by an Ajv of its own, dropped with its contract: an
 * Ajv's code scope keeps every pattern it ever compiled (removeSchema does not free them), so a
 * shared one would grow with every distinct schema a client sends. Checking a schema against
 * the 2020-12 meta-schema is the costly part of a new Ajv, so one Ajv, which compiles nothing
 * of the client's, does that for all; the per-schema one skips it.
 */
function loadAjv(): Promise<Engines> {
  engines ??= loadPackages().then(({ ajv2020: ajvModule, re2js: re2Module }) => {
    const Ajv = ((ajvModule as unknown as { default: AjvClass }).default ?? ajvModule) as AjvClass;
    const options = checkerOptions(re2Module);
    const schemaChecker = new Ajv(options);
    return { schemaChecker, compiler: () => new Ajv({ ...options, meta: false, validateSchema: false }), metaSchemas: new Set(Object.keys(schemaChecker.schemas)) };
  });
  return engines;
}

/** Compiles `schema` (throws OutputSchemaError naming what is wrong with it). */
export async function compileOutputSchema(schema: JsonObject): Promise<OutputContract> {
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_OUTPUT_SCHEMA_BYTES) throw new OutputSchemaError(`the schema is ${bytes} bytes of JSON; at most ${MAX_OUTPUT_SCHEMA_BYTES} are accepted`);
  const expansion = expansionProblem(schema, (message) => new OutputSchemaError(message));
  if (expansion) throw new OutputSchemaError(expansion);
  const { schemaChecker, compiler, metaSchemas } = await loadAjv();
  const dialect = metaSchemaProblem(schema.$schema, metaSchemas);
  if (dialect) throw new OutputSchemaError(dialect);
  let validate: import("ajv/dist/2020.js").ValidateFunction;
  try {
    if (!schemaChecker.validateSchema(schema)) throw new Error(`schema is invalid: ${schemaChecker.errorsText(schemaChecker.errors)}`);
    validate = compiler().compile(schema);
  } catch (error) {
    throw new OutputSchemaError(`not a usable JSON Schema (2020-12): ${(error as Error).message}`);
  }
  const wrapped = schema.type !== "object";
  const check = (args: JsonObject): Check => {
    if (wrapped && !Object.hasOwn(args, "value")) return { ok: false, problem: "the answer goes in the 'value' argument, which is missing" };
    const value = wrapped ? (args.value as JsonValue) : args;
    try {
      if (validate(value)) return { ok: true, value };
    } catch (error) {
      // A schema that refers to itself without consuming the value (`{"$ref": "#"}`) recurses until the stack runs out.
      return { ok: false, problem: `the schema cannot be checked: ${(error as Error).message}` };
    }
    const errors = validate.errors ?? [];
    const shown = errors.slice(0, ERRORS_SHOWN).map((e) => `${wrapped ? "value" : "answer"}${e.instancePath || ""} ${e.message ?? "is invalid"}`);
    if (errors.length > ERRORS_SHOWN) shown.push(`and ${errors.length - ERRORS_SHOWN} more`);
    return { ok: false, problem: shown.join("; ") };
  };
  return { schema, tool: finalAnswerTool(schema, wrapped), check };
}

/**
 * Why `$schema` is checked before Ajv sees it: the checker resolves any `$schema` it does not
 * hold (a fragment of a meta-schema, `…/meta/applicator#/properties/not`, in any of its
 * percent-encodings) and keeps it, compiled, for its life: the one shared checker would grow
 * with every distinct value a client sends. Only the dialect's own meta-schemas are taken.
 */
function metaSchemaProblem($schema: JsonValue | undefined, metaSchemas: ReadonlySet<string>): string | undefined {
  if ($schema === undefined) return undefined;
  if (typeof $schema === "string" && metaSchemas.has($schema.endsWith("#") ? $schema.slice(0, -1) : $schema)) return undefined;
  const shown = typeof $schema === "string" ? JSON.stringify($schema.length > 200 ? `${$schema.slice(0, 200)}…` : $schema) : `a ${Array.isArray($schema) ? "list" : $schema === null ? "null" : typeof $schema}`;
  return `$schema is ${shown}: only the JSON Schema 2020-12 dialect is accepted (${[...metaSchemas][0]}, or no $schema)`;
}

function finalAnswerTool(schema: JsonObject, wrapped: boolean): ToolSpec {
  const description =
    "Give your final answer by calling this tool once you are done; its arguments are the answer, checked against the required JSON Schema. " +
    "Do not answer in plain text: only this call ends the task.";
  if (!wrapped) return { name: FINAL_ANSWER_TOOL, description, parameters: schema };
  // `$defs` stay at the root, where the schema's own `#/$defs/...` references point.
  const { $defs, definitions, ...value } = schema;
  const parameters: JsonObject = { type: "object", properties: { value }, required: ["value"], additionalProperties: false };
  if ($defs !== undefined) parameters.$defs = $defs;
  if (definitions !== undefined) parameters.definitions = definitions;
  return { name: FINAL_ANSWER_TOOL, description: `${description} The answer goes in 'value'.`, parameters };
}

/** One structured turn's answers: what was accepted, and how many tries are left. */
export class FinalAnswer {
  /** Set once a valid answer came. */
  accepted: { value: JsonValue } | undefined;
  private failures = 0;
  private lastProblem = "";

  constructor(readonly contract: OutputContract) {}

  /** Answers a `final_answer` call: accepted, or an error result saying what to fix. */
  answer(call: ToolCallBlock): ToolOutput {
    if (this.accepted) return text("ignored: a valid final answer was already given in this turn", true);
    const result: Check =
      call.rawArguments !== undefined
        ? { ok: false, problem: `the arguments are not a valid JSON object: ${call.rawArguments.slice(0, 500)}` }
        : this.contract.check(call.arguments);
    if (result.ok) {
      this.accepted = { value: result.value };
      return text("accepted: this is the final answer", false);
    }
    return text(this.failed(`the final answer does not match the required schema: ${result.problem}`), true);
  }

  /** The model answered in plain text: the reminder that goes back to it (counts as an attempt). */
  remind(): string {
    return this.failed(`you must give the final answer by calling the ${FINAL_ANSWER_TOOL} tool (its parameters are the required JSON Schema), not in plain text`);
  }

  /** 1-based number of the attempt that failed last. */
  get attempts(): number {
    return this.failures;
  }

  /** No tries are left: the turn ends with `endReason()`. */
  get exhausted(): boolean {
    return !this.accepted && this.failures >= MAX_OUTPUT_ATTEMPTS;
  }

  endReason(): OutputInvalidReason {
    return { kind: "output-invalid", message: `no valid answer after ${this.failures} attempts; the last: ${this.lastProblem}` };
  }

  private failed(problem: string): string {
    this.failures += 1;
    this.lastProblem = problem;
    const left = MAX_OUTPUT_ATTEMPTS - this.failures;
    return left > 0 ? `${problem}. Call ${FINAL_ANSWER_TOOL} again (${left} attempt${left === 1 ? "" : "s"} left).` : `${problem}. No attempts are left.`;
  }
}

const text = (t: string, isError: boolean): ToolOutput => ({ content: [{ type: "text", text: t }], isError });
