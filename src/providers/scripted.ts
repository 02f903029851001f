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

function checkTurns(turns: unknown, where: string): ScriptTurn[] {
  if (!Array.isArray(turns) || turns.length === 0) fail(where, "'turns' must be a non-empty array");
  turns.forEach((turn, t) => {
    const steps = (turn as ScriptTurn)?.steps;
    if (!Array.isArray(steps) || steps.length === 0) fail(where, `turns[${t}].steps must be a non-empty array`);
    steps.forEach((step, s) => {
      const at = `turns[${t}].steps[${s}]`;
      if (typeof step !== "object" || step === null || Array.isArray(step)) fail(where, `${at} must be an object`);
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
          if (typeof (call as { name?: unknown })?.name !== "string") fail(where, `${callAt}.name must be a string`);
          const args = (call as { arguments?: unknown }).arguments;
          if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) fail(where, `${callAt}.arguments must be an object`);
        });
      }
      if (step.error !== undefined && typeof step.error?.message !== "string") fail(where, `${at}.error.message must be a string`);
    });
  });
  return turns as ScriptTurn[];
}

/** Validates a parsed script (`{turns, subagent?}`, or `{steps}` for one turn). */
export function parseScript(value: unknown, where: string): Script {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(where, "the script must be a JSON object");
  const raw = value as { turns?: unknown; steps?: unknown; subagent?: unknown; compaction?: unknown };
  const turns = checkTurns(raw.turns ?? (raw.steps !== undefined ? [{ steps: raw.steps }] : undefined), where);
  const script: Script = { turns };
  if (raw.compaction !== undefined) {
    const steps = (raw.compaction as { steps?: unknown })?.steps;
    script.compaction = { steps: checkTurns([{ steps }], `${where} (compaction)`)[0].steps };
  }
  if (raw.subagent !== undefined) {
    const sub = raw.subagent as { turns?: unknown; steps?: unknown };
    script.subagent = { turns: checkTurns(sub?.turns ?? (sub?.steps !== undefined ? [{ steps: sub.steps }] : undefined), `${where} (subagent)`) };
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
