/**
 * Hooks (PROTOCOL.md "Turn control"): at a hook point the turn records a durable `hook/request`
 * and waits, like an approval, for the client's `session/hook`; a durable `hook/decision`
 * records the answer, and the turn acts on it:
 *
 * - `prompt-submit`, after `turn/start` and before the first model request: `block` ends the
 *   turn `blocked` with no model request; `context` is appended to the user message (the
 *   history applies both from the decision: agent/session.ts).
 * - `post-tool`, after a tool ran and before its `tool/result`: the answer may replace the
 *   result's content and error flag and append a `context` text block.
 * - `stop`, when the model ended the turn with an answer: `continue` joins the history as a
 *   user message and the turn goes on (bounded by `maxSteps`).
 *
 * Invariants: every wait ends once (ClientWaits) and is forgotten here when it ends, so a late
 * or repeated answer is `unknown-hook`. No answer (the deadline, a closed input) is a recorded
 * skip: the turn goes on as if the client had answered `{}`. A cancelled turn records no
 * decision (the turn/end says why it ended). A hook left waiting by a bridge that stopped is
 * recorded as skipped when the session's next turn starts (`settleLeftoverHooks`).
 *
 * Which sessions: `post-tool` in every session, subagents' included (as approvals gate every
 * session's calls); `prompt-submit` and `stop` in top-level turns only (a subagent's prompt is
 * the parent model's, and its answer is a tool result, not the end of the user's turn).
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import type { HookAnswer, HookName, HookRequestEventData, JsonObject, TextBlock, ToolCallBlock, TurnEndReason } from "../protocol/index.js";
import type { ToolOutput } from "../tools/types.js";
import type { ClientWaits, WaitOutcome } from "./client-waits.js";
import type { Session } from "./session.js";

/** The answer fields each hook takes; any other given field is refused (-32602) and the hook keeps waiting. */
const ANSWER_FIELDS: Record<HookName, ReadonlySet<keyof HookAnswer>> = {
  "prompt-submit": new Set(["block", "context"]),
  "post-tool": new Set(["content", "isError", "context"]),
  stop: new Set(["continue"]),
};

/** What a prompt-submit hook made of the turn: it goes on, or it ends now with this reason. */
export type PromptVerdict = "go" | Extract<TurnEndReason, { kind: "blocked" } | { kind: "aborted" }>;

/** The hook points one turn runs with (`TurnConfig.hooks`); an absent one is not asked. */
export interface TurnHooks {
  promptSubmit?(session: Session, content: TextBlock[], signal: AbortSignal): Promise<PromptVerdict>;
  /** `args`: the arguments the tool ran with. Returns the output to record. */
  postTool?(session: Session, call: ToolCallBlock, args: JsonObject, output: ToolOutput, signal: AbortSignal): Promise<ToolOutput>;
  /** `continue`: the text that goes back to the model; `{}`: the turn completes; `aborted`: it was cancelled meanwhile. */
  stop?(session: Session, text: string, signal: AbortSignal): Promise<{ continue?: string } | "aborted">;
}

/** How `answer` went: taken, nobody waits under that id, or a field this hook does not take. */
export type HookAnswerOutcome = { kind: "taken" } | { kind: "unknown" } | { kind: "refused"; field: string; hook: HookName };

/** A hook request's data less its id (distributed over the hooks, so each keeps its own fields). */
type Asked = HookRequestEventData extends infer U ? (U extends HookRequestEventData ? Omit<U, "hookId"> : never) : never;

/** The hooks of one runtime (`initialize.hooks`). */
export class HookPoints {
  /** Hooks waiting now: `sessionId\0hookId` → the hook, to check an answer's fields before it is taken. */
  private readonly waiting = new Map<string, HookName>();
  private readonly top: TurnHooks;
  private readonly child: TurnHooks;

  constructor(
    enabled: Iterable<HookName>,
    private readonly waits: ClientWaits,
  ) {
    const on = new Set(enabled);
    const postTool = on.has("post-tool") ? this.postTool.bind(this) : undefined;
    this.top = {
      ...(on.has("prompt-submit") ? { promptSubmit: this.promptSubmit.bind(this) } : {}),
      ...(postTool ? { postTool } : {}),
      ...(on.has("stop") ? { stop: this.stop.bind(this) } : {}),
    };
    this.child = postTool ? { postTool } : {};
  }

  /** The hooks a turn at subagent `depth` runs with (0: a top-level turn). */
  forDepth(depth: number): TurnHooks {
    return depth === 0 ? this.top : this.child;
  }

  /** Hands the client's `session/hook` to the hook waiting under `hookId` in `sessionId`. */
  answer(sessionId: string, hookId: string, answer: HookAnswer): HookAnswerOutcome {
    const hook = this.waiting.get(key(sessionId, hookId));
    if (hook === undefined) return { kind: "unknown" };
    for (const field of Object.keys(answer) as Array<keyof HookAnswer>) {
      if (answer[field] !== undefined && !ANSWER_FIELDS[hook].has(field)) return { kind: "refused", field, hook };
    }
    return this.waits.answer("hook", sessionId, hookId, answer) ? { kind: "taken" } : { kind: "unknown" };
  }

  private async promptSubmit(session: Session, content: TextBlock[], signal: AbortSignal): Promise<PromptVerdict> {
    const answer = await this.ask(session, { hook: "prompt-submit", content }, signal);
    if (answer === "aborted") return { kind: "aborted" };
    if (answer.block !== undefined) return { kind: "blocked", message: answer.block };
    return "go";
  }

  private async postTool(session: Session, call: ToolCallBlock, args: JsonObject, output: ToolOutput, signal: AbortSignal): Promise<ToolOutput> {
    const asked = { hook: "post-tool" as const, callId: call.id, name: call.name, arguments: args, content: output.content, isError: output.isError };
    const answer = await this.ask(session, asked, signal);
    // Cancelled meanwhile: the tool did run, so its own output is what the history records.
    if (answer === "aborted") return output;
    const content = [...(answer.content ?? output.content)];
    if (answer.context) content.push({ type: "text", text: answer.context });
    return { content, isError: answer.isError ?? output.isError };
  }

  private async stop(session: Session, text: string, signal: AbortSignal): Promise<{ continue?: string } | "aborted"> {
    const answer = await this.ask(session, { hook: "stop", text }, signal);
    if (answer === "aborted") return "aborted";
    return answer.continue !== undefined ? { continue: answer.continue } : {};
  }

  /**
   * Records the request, waits, and records the decision: the answer as given, or `skipped` with
   * the reason (then the answer is `{}`). `aborted`: the turn was cancelled; nothing is recorded.
   */
  private async ask(session: Session, asked: Asked, signal: AbortSignal): Promise<HookAnswer | "aborted"> {
    const hookId = `hook_${randomUUID()}`;
    const k = key(session.id, hookId);
    // Registered before the event is announced, so an answer that comes at once finds it.
    const waiting = this.waits.wait<HookAnswer>("hook", session.id, hookId, signal);
    this.waiting.set(k, asked.hook);
    let outcome: WaitOutcome<HookAnswer>;
    try {
      await session.emit("hook/request", { hookId, ...asked });
      outcome = await waiting;
    } finally {
      this.waiting.delete(k);
      // The request could not be recorded: release the wait (and its timer) now.
      this.waits.answer("hook", session.id, hookId, {});
    }
    if (outcome.kind === "aborted") return "aborted";
    if (outcome.kind === "answered") {
      await session.emit("hook/decision", { hookId, hook: asked.hook, ...outcome.value });
      return outcome.value;
    }
    const skipped =
      outcome.kind === "timed-out" ? `no answer came within ${outcome.afterMs} ms (clientToolTimeoutMs)` : `no answer can come: ${outcome.why}`;
    await session.emit("hook/decision", { hookId, hook: asked.hook, skipped });
    return {};
  }
}

/**
 * At a turn's start: hooks a stopped bridge left waiting (their `hook/request` is the log's last
 * word on them, and no `turn/end` came after) are recorded as skipped, so the log says how each
 * ended. A post-tool hook's tool did run, and its request holds the output: that output becomes
 * the call's `tool/result`, instead of the "no result" error a call cut off before it ran gets.
 */
export async function settleLeftoverHooks(session: Session): Promise<void> {
  for (const request of session.leftoverHooks()) {
    const skipped = "no answer: the bridge stopped while this hook waited";
    await session.emit("hook/decision", { hookId: request.hookId, hook: request.hook, skipped });
    if (request.hook === "post-tool" && session.unansweredCalls().some((c) => c.callId === request.callId)) {
      const { callId, name, content, isError } = request;
      await session.emit("tool/result", { callId, name, content, isError, durationMs: 0 });
    }
  }
}

function key(sessionId: string, hookId: string): string {
  return `${sessionId}\u0000${hookId}`;
}
