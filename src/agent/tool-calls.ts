/**
 * A step's tool calls, run and recorded (agent/loop.ts runs them once the step's message is
 * recorded): consecutive read-only calls together, every other call alone and in order; each
 * call gets exactly one `tool/result`, in the model's order, whatever happens to it (aborted,
 * unknown, malformed arguments, refused, thrown), so the history stays one the next request
 * can send.
 *
 * @module
 */
import { MAX_JSON_DEPTH } from "../json-depth.js";
import type { JsonObject, ToolCallBlock } from "../protocol/index.js";
import { FINAL_ANSWER_TOOL } from "../protocol/index.js";
import { ToolError, type ToolOutput } from "../tools/types.js";
import type { Session } from "./session.js";
import type { FinalAnswer } from "./final-answer.js";
import { argumentsTooDeep } from "./message-assembler.js";
import type { TurnCheckpoint } from "./turn-checkpoint.js";
import type { TurnConfig } from "./turn-config.js";

/**
 * Runs a step's tool calls: consecutive read-only calls together, every other call alone and
 * in order; results are recorded in the model's order either way.
 */
export async function runToolCalls(session: Session, config: TurnConfig, signal: AbortSignal, calls: ToolCallBlock[], final: FinalAnswer | undefined, recorder: TurnCheckpoint | undefined): Promise<void> {
  let i = 0;
  while (i < calls.length) {
    const batch = [calls[i]];
    if (config.tools.get(calls[i].name)?.readOnly) {
      while (i + batch.length < calls.length && config.tools.get(calls[i + batch.length].name)?.readOnly) batch.push(calls[i + batch.length]);
    }
    const run = (call: ToolCallBlock) => executeTool(session, config, signal, call, final, recorder);
    const outcomes = batch.map((call) => (config.trace ? config.trace.tool(call, () => run(call)) : run(call)));
    for (let k = 0; k < batch.length; k++) {
      const { output, durationMs, ranWith } = await outcomes[k];
      // A tool that ran meets the post-tool hook before its result is recorded (agent/hooks.ts).
      const hooked = ranWith && config.hooks?.postTool && !signal.aborted ? await config.hooks.postTool(session, batch[k], ranWith, output, signal) : output;
      await recordResult(session, batch[k], hooked, durationMs);
    }
    i += batch.length;
  }
}

async function executeTool(
  session: Session,
  config: TurnConfig,
  signal: AbortSignal,
  call: ToolCallBlock,
  final: FinalAnswer | undefined,
  recorder: TurnCheckpoint | undefined,
): Promise<{ output: ToolOutput; durationMs: number; ranWith?: JsonObject }> {
  let started = performance.now();
  const done = (output: ToolOutput) => ({ output, durationMs: Math.round(performance.now() - started) });
  const error = (text: string) => done({ content: [{ type: "text", text }], isError: true });
  if (signal.aborted) return error("the turn was aborted before this tool call ran");
  if (final && call.name === FINAL_ANSWER_TOOL) return done(final.answer(call));
  const tool = config.tools.get(call.name);
  if (!tool) {
    const offered = [...config.tools.keys()].join(", ") || "none";
    const why = config.explainUnknownTool?.(call.name);
    return error(`unknown tool '${call.name}'${why ? ` (${why})` : ""}; the tools offered are: ${offered}`);
  }
  if (call.rawArguments !== undefined) {
    if (argumentsTooDeep(call.rawArguments)) {
      return error(`the arguments of this ${call.name} call nest deeper than ${MAX_JSON_DEPTH} levels (the limit); send flatter arguments`);
    }
    return error(`the arguments of this ${call.name} call are not a valid JSON object: ${call.rawArguments.slice(0, 2000)}`);
  }
  let args = call.arguments;
  if (config.gate) {
    const verdict = await config.gate.check(session, call, tool, signal);
    if ("refused" in verdict) return done(verdict.refused);
    args = verdict.run;
    started = performance.now(); // the duration is the tool's, not the time the approval took
  }
  // Before the tool may change the workspace: what undoes it is kept (not counted in its duration).
  if (recorder) {
    await recorder.beforeTool(call.name, tool.readOnly, args);
    started = performance.now();
  }
  try {
    const output = await tool.execute(args, {
      workspace: config.workspace,
      signal,
      permissionMode: config.permissionMode,
      sessionId: session.id,
      callId: call.id,
      subagents: config.subagents,
      client: config.client,
    });
    return { ...done(output), ranWith: args };
  } catch (caught) {
    if (signal.aborted) return error(`the ${call.name} call was aborted`);
    const failed = error(caught instanceof ToolError ? caught.message : `${call.name} failed: ${caught instanceof Error ? caught.message : String(caught)}`);
    return { ...failed, ranWith: args };
  }
}

export async function recordResult(session: Session, call: ToolCallBlock, output: ToolOutput, durationMs: number): Promise<void> {
  await session.emit("tool/result", { callId: call.id, name: call.name, content: output.content, isError: output.isError, durationMs });
}
