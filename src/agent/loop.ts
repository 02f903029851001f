/**
 * The agent loop: one turn is the user's message, then steps — one model request each — whose
 * tool calls run and feed their results back, until the model stops, a limit is hit, the model
 * fails, or the turn is aborted. Whatever happens, the turn ends with one `turn/end` and leaves
 * a history the next request can send: a step cut short is recorded as a partial assistant
 * message, and each of its tool calls without a result gets an error result.
 */
import { newMessageId } from "./message-id.js";
import type { FinishReason, SessionEventDataMap, TextBlock, TurnEndReason, Usage } from "../protocol/index.js";
import { ModelError } from "../providers/types.js";
import type { Session } from "./session.js";
import { FinalAnswer } from "./final-answer.js";
import { compactIfNeeded, compactNow, type CompactionContext } from "./compaction.js";
import type { ToolSpec } from "../providers/types.js";
import { MessageAssembler } from "./message-assembler.js";
import { addUsage } from "./usage.js";
import { requestTools } from "./offered-tools.js";
import { TurnBudget, withCost } from "./cost.js";
import { settleLeftoverHooks } from "./hooks.js";
import { LazyTurnCheckpoint, type TurnCheckpoint } from "./turn-checkpoint.js";
import type { TurnConfig } from "./turn-config.js";
import { recordResult, runToolCalls } from "./tool-calls.js";

export type { TurnCheckpoint } from "./turn-checkpoint.js";
export type { TurnConfig } from "./turn-config.js";

/** Runs one turn to its end and returns the reason recorded in its `turn/end`. */
export async function runTurn(session: Session, content: TextBlock[], config: TurnConfig, signal: AbortSignal): Promise<TurnEndReason> {
  // Calls left without a result by a bridge that stopped mid-turn (killed while a tool ran or a
  // client tool or approval was pending) get one now, durably, before the history goes on.
  // Hooks it left waiting are recorded as skipped first (a post-tool hook's output is its result).
  // (Looked for only when there are: most turns have none, and an async call costs its promises.)
  if (session.hasLeftovers) {
    if (session.leftoverHooks().length > 0) await settleLeftoverHooks(session);
    for (const { callId, name } of session.unansweredCalls()) {
      const text = "no result: the bridge stopped while this call was pending, so it may not have run to completion";
      await session.emit("tool/result", { callId, name, content: [{ type: "text", text }], isError: true, durationMs: 0 });
    }
  }
  // An event is awaited only when the client is behind (`Session.emit`): no tick otherwise.
  let room = session.emit("user/message", { id: newMessageId(), content });
  if (room) await room;
  const turn = session.nextTurnNumber();
  room = session.emit("turn/start", config.output ? { turn, outputSchema: config.output.schema } : { turn });
  if (room) await room;
  // This turn's checkpoint (turn-checkpoint.ts), beside the config rather than in a copy of it.
  const recorder = config.checkpoints ? new LazyTurnCheckpoint(config.checkpoints, turn) : undefined;
  const final = config.output ? new FinalAnswer(config.output) : undefined;
  let usage: Usage | undefined;
  // The prompt's budget (cost.ts), shared with the subagents this turn starts (`subagents` below
  // gets it through the runtime). A request that answered without reporting its usage has an
  // unknown cost: with a budget, no further request starts (it may have spent all of it);
  // otherwise a gateway that never reports usage would make every request free to the budget.
  const budget = config.budget ?? (config.maxCostUsd !== undefined ? new TurnBudget(config.maxCostUsd) : undefined);
  const overBudget = (): TurnEndReason | undefined => budget?.reached();
  /** Counts a request that ran (`answered`) in the turn's usage and against the budget. */
  const spend = (answered: boolean, requestUsage: Usage | undefined) => {
    usage = addUsage(usage, requestUsage);
    if (config.prices !== undefined) budget?.charge(answered, requestUsage);
  };
  let reason: TurnEndReason | undefined;
  let compactionFailed = false;
  /** After a summary that was no shorter than the history: the history's size past which another is worth a request. */
  let summaryWorthAsking: number | undefined;
  let retriedAfterRefusal = false;
  const tools = requestTools(config.tools, config.output);
  // What compaction needs for this turn's requests; absent: no compaction.
  const { provider, model, system, maxTokens } = config;
  const compaction: CompactionContext | undefined = config.context && {
    session,
    provider: config.trace ? config.trace.summarizing(provider, (u) => withCost(u, config.prices)) : provider,
    model,
    system,
    maxTokens,
    tools,
    window: config.context.window,
    compactAt: config.context.compactAt,
    turn,
    signal,
  };
  // The prompt-submit hook may end the turn before any model request (agent/hooks.ts).
  const verdict = config.hooks?.promptSubmit ? await config.hooks.promptSubmit(session, content, signal) : "go";
  if (verdict !== "go") reason = verdict;
  for (let step = 1; reason === undefined; step++) {
    if (signal.aborted) {
      reason = { kind: "aborted" };
      break;
    }
    if (step > config.maxSteps) {
      reason = { kind: "max-steps", limit: config.maxSteps };
      break;
    }
    reason = overBudget();
    if (reason) break;
    // Steers that came during the last step join the history now, after its tool results.
    if (config.steers?.pending) await config.steers.drain(session, signal);
    // Before the request would pass compactAt: cut old tool outputs, then summarize (compaction.ts).
    const compacting = compaction && !compactionFailed ? compactIfNeeded(compaction, summaryWorthAsking === undefined || session.historyChars > summaryWorthAsking) : undefined;
    if (compacting) {
      const done = await compacting;
      // Counted whenever the model answered it: a summary that failed after streaming (cut off
      // at `length`, say) was paid for too, and without usage its cost is unknown (cost.ts).
      spend(done.answered === true, withCost(done.usage, config.prices));
      // A summary that cannot be made now will not be made at the next step either: try no more this turn.
      if (done.failed) compactionFailed = true;
      // One that saved nothing is asked for again once the history has grown by its length.
      if (done.noGainChars !== undefined) summaryWorthAsking = session.historyChars + done.noGainChars;
      // The summary's request may have spent the budget; steers that came meanwhile join now.
      reason = overBudget();
      if (reason) break;
      if (config.steers?.pending) await config.steers.drain(session, signal);
    }
    room = session.emit("step/start", { turn, step });
    if (room) await room;
    let outcome = await runStep(session, config, tools, signal, turn, step, final, recorder);
    spend(outcome.answered === true, outcome.usage);
    if (outcome.refusedAsTooLong && compaction && !retriedAfterRefusal && !signal.aborted) {
      // Refused as too long for the window: one compaction, and one retry of the step (no second step/start).
      retriedAfterRefusal = true;
      const done = await compactNow(compaction, "refused");
      spend(done.answered === true, withCost(done.usage, config.prices));
      const spent = overBudget();
      if (spent) outcome = { end: spent };
      else if (done.compacted && !signal.aborted) {
        outcome = await runStep(session, config, tools, signal, turn, step, final, recorder);
        spend(outcome.answered === true, outcome.usage);
      }
    }
    reason = outcome.end;
    // A steer that came while the model wrote its answer is for the model: the turn goes on to
    // answer it, if it may make another request (steps and budget left). Otherwise it ends as
    // it would have, and the steer is refused; so is one for a structured turn whose answer
    // was accepted. A turn that goes on for a steer has not ended: no stop hook is asked.
    const steered = () =>
      reason?.kind === "completed" && config.steers?.pending === true && !final?.accepted && step < config.maxSteps && !overBudget();
    if (steered()) reason = undefined;
    // The model ended the turn with an answer: a stop hook may send it back to work (agent/hooks.ts).
    else if (outcome.answer !== undefined && config.hooks?.stop) {
      const stop = await config.hooks.stop(session, outcome.answer, signal);
      if (stop === "aborted") reason = { kind: "aborted" };
      else if (stop.continue !== undefined) reason = undefined;
      // A steer that came while the stop hook waited, as above.
      else if (steered()) reason = undefined;
    }
  }
  // The turn is ending: steers still waiting, and later ones, are refused (steered: false).
  config.steers?.close();
  const recorded = recorder?.finish(session);
  if (recorded) await recorded;
  // Fields in this order, absent ones left out (no object spread for each event). Each shape is
  // one whole literal: V8 gives a literal's object exactly its own fields, so a field added
  // afterwards goes to a properties array of its own, kept with the event for the session's life.
  const end: SessionEventDataMap["turn/end"] = usage ? { turn, reason, usage } : { turn, reason };
  if (reason.kind === "completed" && final?.accepted) end.output = final.accepted.value;
  room = session.emit("turn/end", end);
  if (room) await room;
  session.sync();
  return reason;
}

interface StepOutcome {
  /** Set when the turn ends with this step. */
  end?: TurnEndReason;
  usage?: Usage;
  /** The model refused the request as too long for its context window, before it streamed anything. */
  refusedAsTooLong?: boolean;
  /** The turn completes with this step's plain answer (its text): what a stop hook is asked about (set only when the turn has one). */
  answer?: string;
  /** The model streamed something back: the request ran, and cost what its usage says (unknown without one). */
  answered?: boolean;
}

async function runStep(
  session: Session,
  config: TurnConfig,
  tools: ToolSpec[],
  signal: AbortSignal,
  turn: number,
  step: number,
  final: FinalAnswer | undefined,
  recorder: TurnCheckpoint | undefined,
): Promise<StepOutcome> {
  const assembler = new MessageAssembler();
  const charsAtRequest = session.historyChars;
  let failure: TurnEndReason | undefined;
  /** The stream failed (threw) rather than finishing. */
  let cutShort = false;
  const chatSpan = config.trace?.chat(step);
  try {
    const stream = config.provider.stream(
      {
        model: config.model,
        system: config.system,
        messages: session.messages,
        tools,
        maxTokens: config.maxTokens,
        sessionId: session.id,
        parentSessionId: session.parentSessionId,
        turn,
        step,
      },
      signal,
    );
    reading: for await (const batch of stream) {
      for (const part of batch) {
        if (signal.aborted) break reading;
        assembler.add(part);
        if (part.type === "text-delta" || part.type === "reasoning-delta" || part.type === "tool-call-delta") {
          // Awaited only when the client is behind (backpressure): no tick per chunk otherwise.
          const room = session.emit("assistant/chunk", { turn, step, chunk: part });
          if (room) await room;
        }
      }
    }
    if (signal.aborted) failure = { kind: "aborted" };
    else if (assembler.finishReason === undefined) failure = { kind: "model-error", message: "the model stream ended before it finished" };
  } catch (error) {
    cutShort = true;
    failure = signal.aborted ? { kind: "aborted" } : modelFailure(error);
  }

  // The next request's prompt is estimated from this one's (compaction.ts).
  if (assembler.usage) session.lastPrompt = { inputTokens: assembler.usage.inputTokens, historyChars: charsAtRequest };
  // Ids of the session's earlier client tool requests are taken: an answer still on its way to
  // one of them must not settle a new call that repeats its id (message-assembler.ts).
  const calls = assembler.toolCalls(turn, step, session.callIdAsked);
  const finish = assembler.finishReason;
  const usage = withCost(assembler.usage, config.prices);
  const answered = !assembler.isEmpty();
  if (!failure && finish === "length") failure = { kind: "max-tokens" };
  if (!failure && finish !== "stop" && finish !== "tool-calls") {
    failure = { kind: "model-error", message: `the model stopped with finish reason '${finish}'` };
  }
  // "error" for a step cut short; a finish reason the provider did send passes through (even
  // one the loop does not know, which ends the turn as a model error).
  const finishReason: FinishReason =
    failure?.kind === "aborted" ? "aborted" : failure?.kind === "model-error" && (finish === undefined || cutShort) ? "error" : (finish as string);

  chatSpan?.end({ finishReason, usage, response: assembler.response, content: () => assembler.content(calls), failure });
  // A step that produced nothing leaves no message: there is nothing to resume from.
  if (!assembler.isEmpty()) {
    const content = assembler.content(calls);
    // One whole literal for each shape, as `turn/end`'s data (runTurn).
    const id = newMessageId();
    const message: SessionEventDataMap["assistant/message"] = usage ? { id, turn, step, content, finishReason, usage } : { id, turn, step, content, finishReason };
    const room = session.emit("assistant/message", message);
    if (room) await room;
  }

  if (failure) {
    const why = failure.kind === "aborted" ? "the turn was aborted before this tool call ran" : `not run: the step ended with ${failure.kind}`;
    for (const call of calls) await recordResult(session, call, { content: [{ type: "text", text: why }], isError: true }, 0);
    const refusedAsTooLong = failure.kind === "model-error" && failure.code === "context-window" && assembler.isEmpty();
    return { end: failure, usage, answered, refusedAsTooLong };
  }
  if (calls.length === 0) {
    if (!final) {
      // The answer's text is for a stop hook to be asked about: made only when there is one.
      const answer = config.hooks?.stop ? answerText(assembler) : undefined;
      return { end: completed(), usage, answered, answer };
    }
    // A structured turn ends only with a valid final_answer: a plain-text answer is reminded of it.
    const reminder = final.remind();
    if (final.exhausted) return { end: final.endReason(), usage, answered };
    await session.emit("output/reminder", { turn, attempt: final.attempts, text: reminder });
    return { usage, answered };
  }
  await runToolCalls(session, config, signal, calls, final, recorder);
  if (signal.aborted) return { end: { kind: "aborted" }, usage, answered };
  if (final?.accepted) return { end: { kind: "completed" }, usage, answered };
  return { end: final?.exhausted ? final.endReason() : undefined, usage, answered };
}

/**
 * A step's `completed` end, made apart from the step's outcome that carries it. The end is kept
 * (it becomes the turn's `reason`, held by the `turn/end` event), the outcome is not; written as
 * a literal inside the outcome's literal, the two share one V8 allocation site, where too few
 * objects outlive a scavenge for V8 to allocate the kept ones straight into the old generation
 * (`Session.emit` says more). A function of its own, because a minifier folds a
 * local constant back into the outer literal.
 */
function completed(): TurnEndReason {
  return { kind: "completed" };
}

function answerText(assembler: MessageAssembler): string {
  const texts: string[] = [];
  for (const block of assembler.blocks()) if (block.type === "text") texts.push(block.text);
  return texts.join("");
}

function modelFailure(error: unknown): TurnEndReason {
  if (error instanceof ModelError) {
    return {
      kind: "model-error",
      message: error.message,
      ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
      ...(error.code !== undefined ? { code: error.code } : {}),
    };
  }
  return { kind: "model-error", message: error instanceof Error ? error.message : String(error) };
}
