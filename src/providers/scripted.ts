/**
 * The `scripted` provider: an offline, deterministic model that replays a script, streaming
 * chunk by chunk like a real model, so ordering, backpressure and cancellation are exercised
 * for real. `model: "demo"` is the built-in demo script; any other model is a script file path
 * (relative to the workspace). The format is documented in README.md ("The scripted provider").
 *
 * Which step answers a request is derived from the request alone, so a resumed session picks
 * up where it left off: the turn is the number of user messages so far (`turns[i % length]`),
 * the step the number of assistant messages since the last user message.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { isObject } from "../json-value.js";
import { DEMO_SCRIPT } from "./demo-script.js";
import { historyTally } from "./history-tally.js";
import type { Script, ScriptStep, ScriptTurn } from "./script-format.js";
import {
  ModelError,
  ProviderUnavailableError,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamBatch,
  type ModelStreamPart,
  type ProviderFactory,
} from "./types.js";

export type { Script, ScriptStep, ScriptTurn } from "./script-format.js";

const DEFAULT_CHUNK_SIZE = 16;

/**
 * Waits `ms`, or throws the signal's reason. `node:timers/promises` is loaded at the first
 * delayed step, not with this module: the provider registry is on the start-up path (spawn →
 * `initialize` response), where loading it is a share of the start-up (bench/README.md, "Cold
 * start without bubblewrap, round 4").
 */
const sleep = (ms: number, signal: AbortSignal): Promise<void> => process.getBuiltinModule("node:timers/promises").setTimeout(ms, undefined, { signal });

/**
 * The most deltas of an unpaced step handed over in one batch (types.ts `ModelStreamBatch`):
 * enough that the async step per batch is small beside its chunks' own work, few enough that
 * what a batch holds while the loop waits for a slow client stays small (parts held across
 * that wait outlive young-generation collections and are promoted; bench/README.md, "Issue 34,
 * round 7").
 */
const BATCH_PARTS = 32;

/**
 * `HARNESS_SCRIPTED_DELAY_MS`: the wait before each chunk of a step that names no `delayMs`
 * (default 0). For showing a scripted turn to a person (scripts/demo.sh paces the built-in demo
 * with it); a script's own `delayMs` wins. Read once per `initialize`, like the HTTP tuning.
 */
export const SCRIPTED_DELAY_VAR = "HARNESS_SCRIPTED_DELAY_MS";

function defaultDelay(env: NodeJS.ProcessEnv): number {
  const raw = env[SCRIPTED_DELAY_VAR];
  if (raw === undefined || raw === "") return 0;
  const ms = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(ms) || ms < 0 || ms > 60_000) {
    throw new ProviderUnavailableError(`${SCRIPTED_DELAY_VAR} must be a number of milliseconds from 0 to 60000, not ${JSON.stringify(raw)}`);
  }
  return ms;
}

function fail(where: string, what: string): never {
  throw new ProviderUnavailableError(`scripted model ${where}: ${what}`);
}

/**
 * The keys each object of the format may hold (script-format.ts). Every object is strict: the
 * script is the user's own test, and a key the format does not know (`toolcalls`, `txt`) would
 * otherwise be dropped in silence, leaving a test that passes while testing nothing.
 */
const KEYS = {
  script: ["turns", "steps", "subagent", "compaction"],
  subagent: ["turns", "steps"],
  compaction: ["steps"],
  turn: ["steps"],
  step: ["reasoning", "text", "toolCalls", "finishReason", "chunkSize", "repeat", "delayMs", "hang", "error", "usage"],
  toolCall: ["id", "name", "arguments", "rawArguments"],
  error: ["message", "httpStatus", "code"],
  usage: ["inputTokens", "outputTokens", "reasoningTokens", "cacheHitTokens", "cacheMissTokens", "costUsd"],
} as const;

/** What the error calls each kind of object: "the keys of a tool call are …". */
const KIND_NAMES: Record<keyof typeof KEYS, string> = {
  script: "the script",
  subagent: "subagent",
  compaction: "compaction",
  turn: "a turn",
  step: "a step",
  toolCall: "a tool call",
  error: "a step's error",
  usage: "a step's usage",
};

/** Edits (insert, delete, replace) from `a` to `b`: for "did you mean" only, so the strings are short. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

/** The known key an unknown one was likely meant to be: same but for case, or one or two edits away. */
function closest(key: string, known: readonly string[]): string | undefined {
  const byCase = known.find((k) => k.toLowerCase() === key.toLowerCase());
  if (byCase) return byCase;
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** Fails on the first key of `obj` that `kind` does not know, naming where it is and the keys it knows. */
function checkKeys(obj: object, kind: keyof typeof KEYS, at: string, where: string): void {
  const known: readonly string[] = KEYS[kind];
  for (const key of Object.keys(obj)) {
    if (known.includes(key)) continue;
    const guess = closest(key, known);
    fail(where, `${at} has an unknown key ${JSON.stringify(key)}${guess ? ` (did you mean '${guess}'?)` : ""}; the keys of ${KIND_NAMES[kind]} are ${known.join(", ")}`);
  }
}

/** `{turns}` or `{steps}` (short for one turn), not both: with both, one of them would be ignored. */
function turnsOf(raw: Record<string, unknown>, at: string, where: string): unknown {
  if (raw.turns !== undefined && raw.steps !== undefined) fail(where, `${at} has both 'turns' and 'steps': give 'turns', or 'steps' for one turn`);
  return raw.turns ?? (raw.steps !== undefined ? [{ steps: raw.steps }] : undefined);
}

/** `turns` where the script names them (`turns`, or `subagent.turns`). */
function checkTurns(turns: unknown, where: string, prefix = ""): ScriptTurn[] {
  if (!Array.isArray(turns) || turns.length === 0) fail(where, `'${prefix}turns' must be a non-empty array`);
  turns.forEach((turn, t) => {
    if (!isObject(turn)) fail(where, `${prefix}turns[${t}] must be an object`);
    checkKeys(turn, "turn", `${prefix}turns[${t}]`, where);
    checkSteps(turn.steps, `${prefix}turns[${t}].steps`, where);
  });
  return turns as ScriptTurn[];
}

/** A non-empty array of steps; `name` is where it is (`turns[0].steps`, `compaction.steps`). */
function checkSteps(steps: unknown, name: string, where: string): ScriptStep[] {
  if (!Array.isArray(steps) || steps.length === 0) fail(where, `${name} must be a non-empty array`);
  steps.forEach((step, s) => {
    const at = `${name}[${s}]`;
    if (!isObject(step)) fail(where, `${at} must be an object`);
    checkKeys(step, "step", at, where);
    for (const key of ["reasoning", "text", "finishReason"] as const) {
      if (step[key] !== undefined && typeof step[key] !== "string") fail(where, `${at}.${key} must be a string`);
    }
    for (const key of ["chunkSize", "repeat"] as const) {
      const v = step[key];
      if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 1)) fail(where, `${at}.${key} must be a positive integer`);
    }
    if (step.delayMs !== undefined && !(typeof step.delayMs === "number" && step.delayMs >= 0)) fail(where, `${at}.delayMs must be a number >= 0`);
    if (step.toolCalls !== undefined) {
      if (!Array.isArray(step.toolCalls)) fail(where, `${at}.toolCalls must be an array`);
      step.toolCalls.forEach((call: unknown, c: number) => {
        const callAt = `${at}.toolCalls[${c}]`;
        if (!isObject(call)) fail(where, `${callAt} must be an object`);
        checkKeys(call, "toolCall", callAt, where);
        if (typeof call.name !== "string") fail(where, `${callAt}.name must be a string`);
        const args = call.arguments;
        if (args !== undefined && !isObject(args)) fail(where, `${callAt}.arguments must be an object`);
      });
    }
    if (step.error !== undefined) {
      if (!isObject(step.error) || typeof step.error.message !== "string") fail(where, `${at}.error.message must be a string`);
      checkKeys(step.error, "error", `${at}.error`, where);
    }
    if (step.usage !== undefined) {
      if (!isObject(step.usage)) fail(where, `${at}.usage must be an object`);
      checkKeys(step.usage, "usage", `${at}.usage`, where);
    }
  });
  return steps as ScriptStep[];
}

/** Validates a parsed script (`{turns, subagent?, compaction?}`, or `{steps}` for one turn). */
export function parseScript(value: unknown, where: string): Script {
  if (!isObject(value)) fail(where, "the script must be a JSON object");
  checkKeys(value, "script", "the script", where);
  const script: Script = { turns: checkTurns(turnsOf(value, "the script", where), where) };
  if (value.compaction !== undefined) {
    const compaction = value.compaction;
    if (!isObject(compaction)) fail(where, "compaction must be an object ({steps: [...]})");
    checkKeys(compaction, "compaction", "compaction", where);
    script.compaction = { steps: checkSteps(compaction.steps, "compaction.steps", where) };
  }
  if (value.subagent !== undefined) {
    const sub = value.subagent;
    if (!isObject(sub)) fail(where, "subagent must be an object ({turns: [...]} or {steps: [...]})");
    checkKeys(sub, "subagent", "subagent", where);
    script.subagent = { turns: checkTurns(turnsOf(sub, "subagent", where), where, "subagent.") };
  }
  return script;
}

/** Loads the script a `model` names: `demo`, or a JSON file path relative to the workspace. */
export function loadScript(model: string, cwd: string): Script {
  if (model === "demo") return DEMO_SCRIPT;
  const file = path.resolve(cwd, model);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    fail(`'${model}'`, `cannot read the script file ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); use model "demo" for the built-in script`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail(`'${model}'`, `${file} is not valid JSON: ${(error as Error).message}`);
  }
  return parseScript(parsed, `'${model}'`);
}

function chunksOf(text: string, size: number): string[] {
  // A text of no more UTF-16 units than `size` holds no more code points either: one chunk, itself.
  if (text.length <= size) return text === "" ? [] : [text];
  const out: string[] = [];
  // Split by code points so a chunk never holds half of a surrogate pair.
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

/**
 * Picks the step that answers this request: by the request's `turn` and `step` when the agent
 * loop gives them (a compacted history no longer holds every user message), else by its history.
 */
export function stepFor(script: Script, request: ModelRequest, summariesAsked = 0): { step: ScriptStep; turnIndex: number; stepIndex: number } {
  if (request.purpose === "compaction") {
    const steps = script.compaction?.steps;
    if (!steps) throw new ModelError("the script has no 'compaction' steps to answer a summarizing request", undefined, "script-exhausted");
    return { step: steps[summariesAsked % steps.length], turnIndex: -1, stepIndex: summariesAsked };
  }
  const turns = request.parentSessionId !== undefined && script.subagent ? script.subagent.turns : script.turns;
  const tally = request.turn === undefined || request.step === undefined ? historyTally(request.messages) : undefined;
  const turnIndex = request.turn !== undefined ? request.turn - 1 : Math.max(0, tally!.users - 1);
  const stepIndex = request.step !== undefined ? request.step - 1 : tally!.sinceUser;
  const turn = turns[turnIndex % turns.length];
  const step = turn.steps[stepIndex];
  if (!step) {
    throw new ModelError(`the script has no step ${stepIndex + 1} for turn ${turnIndex + 1} (its turn has ${turn.steps.length})`, undefined, "script-exhausted");
  }
  return { step, turnIndex, stepIndex };
}

/** The deltas of a step, in the order they stream: its reasoning, its text (`repeat` times), its tool calls. */
function* deltasOf(step: ScriptStep, turnIndex: number, stepIndex: number): Generator<ModelStreamPart & { type: "reasoning-delta" | "text-delta" | "tool-call-delta" }> {
  const size = step.chunkSize ?? DEFAULT_CHUNK_SIZE;
  for (const text of chunksOf(step.reasoning ?? "", size)) yield { type: "reasoning-delta", text };
  const textChunks = chunksOf(step.text ?? "", size);
  const repeat = step.repeat ?? 1;
  // Indexed: a `for…of` here would make an array iterator per repeat, which may be once per chunk.
  for (let r = 0; r < repeat; r++) {
    for (let i = 0; i < textChunks.length; i++) yield { type: "text-delta", text: textChunks[i] };
  }
  for (const [index, call] of (step.toolCalls ?? []).entries()) {
    const args = call.rawArguments ?? JSON.stringify(call.arguments ?? {});
    yield { type: "tool-call-delta", index, id: call.id ?? `call_${turnIndex + 1}_${stepIndex + 1}_${index}`, name: call.name, argumentsDelta: "" };
    for (const piece of chunksOf(args, size)) yield { type: "tool-call-delta", index, argumentsDelta: piece };
  }
}

/**
 * Streams the step that answers `request`, picked on the first `next()` (a script with no such
 * step fails the stream, not the call). One async generator for the whole stream. A paced step
 * hands each delta over after its wait; an unpaced one in batches of up to `BATCH_PARTS`. The
 * step's usage and finish come in the last batch, beside its last deltas.
 */
async function* streamStep(
  script: Script,
  request: ModelRequest,
  signal: AbortSignal,
  summariesAsked: Map<string, number>,
  defaultDelayMs: number,
): AsyncGenerator<ModelStreamBatch> {
  let asked = 0;
  if (request.purpose === "compaction") {
    asked = summariesAsked.get(request.sessionId) ?? 0;
    summariesAsked.set(request.sessionId, asked + 1);
  }
  const { step, turnIndex, stepIndex } = stepFor(script, request, asked);
  const delay = step.delayMs ?? defaultDelayMs;
  let outChars = 0;
  let batch: ModelStreamPart[] = [];
  for (const part of deltasOf(step, turnIndex, stepIndex)) {
    if (delay > 0) await sleep(delay, signal);
    else if (signal.aborted) throw signal.reason;
    outChars += part.type === "tool-call-delta" ? part.argumentsDelta.length : part.text.length;
    batch.push(part);
    if (delay > 0 || batch.length >= BATCH_PARTS) {
      yield batch;
      batch = [];
    }
  }
  if (step.hang || step.error) {
    // The deltas stream first, then the step hangs or fails.
    if (batch.length > 0) yield batch;
    batch = [];
    if (step.hang) {
      await new Promise<void>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    if (step.error) throw new ModelError(step.error.message, step.error.httpStatus, step.error.code);
  }
  // The step's end rides with its last deltas: one batch, so one step of the loop's `for await` less.
  batch.push(
    {
      type: "usage",
      // The system prompt names the workspace path; leaving it out keeps usage the same in every folder.
      usage: step.usage ?? { inputTokens: Math.ceil(historyTally(request.messages).chars / 4), outputTokens: Math.ceil(outChars / 4) },
    },
    { type: "finish", finishReason: step.finishReason ?? (step.toolCalls?.length ? "tool-calls" : "stop") },
  );
  yield batch;
}

export class ScriptedProvider implements ModelProvider {
  readonly name = "scripted";

  /** `defaultDelayMs`: the wait before each chunk of a step without its own `delayMs`. */
  /**
   * Summarizing requests answered so far, per session: the n-th takes the script's n-th
   * compaction step. Counted here because a history holds one summary at most (a later
   * compaction replaces the earlier), so it cannot say how many came before.
   */
  private readonly summariesAsked = new Map<string, number>();

  constructor(
    private readonly script: Script,
    private readonly defaultDelayMs = 0,
  ) {}

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamBatch> {
    return streamStep(this.script, request, signal, this.summariesAsked, this.defaultDelayMs);
  }
}

export const scriptedProvider: ProviderFactory = {
  name: "scripted",
  create: (config) => new ScriptedProvider(loadScript(config.model, config.cwd), defaultDelay(config.env)),
};
