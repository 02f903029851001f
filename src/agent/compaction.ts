/**
 * Compaction (PROTOCOL.md "Long sessions"): keeping a session's prompt inside the model's
 * context window.
 *
 * Before each model request the prompt is estimated: the provider's `inputTokens` of the last
 * request that reported usage (or a compaction's `tokensAfter`), plus a quarter of the
 * characters the history gained since (all of it, system prompt and tools included, when
 * nothing reported usage yet: a new or resumed session). When it would pass `compactAt × window`:
 *
 * 1. old tool outputs are cut to a stub that says what was cut (the last
 *    `KEEP_RECENT_TOOL_OUTPUTS` stay whole). Memory only: the log keeps every output, and a
 *    resumed session cuts them again when it needs to;
 * 2. if that is not enough, the older history is summarized by the model in a dedicated
 *    request (the same system prompt and tools, so the provider's prefix cache serves it, with
 *    `tool_choice: "none"` and an instruction appended), and the durable `context/compacted`
 *    replaces it: the summary, as one user-role message, then the recent history from
 *    `keptFromSeq` on, kept as it was. The kept part starts at an assistant message, so the
 *    summary is followed by an assistant message, as chat servers expect.
 *
 * A request the model refuses as too long (a `context-window` model error) gets one
 * compaction and one retry (loop.ts). `session/compact` runs step 2 on demand.
 *
 * @module
 */
import type { ContextCompactedEventData, TextBlock, Usage } from "../protocol/index.js";
import type { ModelMessage, ModelProvider, ModelRequest, ToolSpec } from "../providers/types.js";
import { messageChars, summaryText, type Session } from "./session.js";

/** `compactAt` when `initialize` gives none. */
export const DEFAULT_COMPACT_AT = 0.8;
/** The window of a model the table does not know. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;
/**
 * DeepSeek's models: "CONTEXT LENGTH 1M" for deepseek-v4-flash (deepseek-flash) and
 * deepseek-v4-pro, and the older names, which its pricing page maps to deepseek-v4-flash
 * (api-docs.deepseek.com/quick_start/pricing). Any other name on the `deepseek` route gets 1M
 * too: every model DeepSeek serves has it. `initialize.contextWindow` overrides the table.
 */
const DEEPSEEK_WINDOW = 1_048_576;
const DEEPSEEK_MODELS: ReadonlyMap<string, number> = new Map([
  ["deepseek-flash", DEEPSEEK_WINDOW],
  ["deepseek-v4-flash", DEEPSEEK_WINDOW],
  ["deepseek-pro", DEEPSEEK_WINDOW],
  ["deepseek-v4-pro", DEEPSEEK_WINDOW],
  ["deepseek-chat", DEEPSEEK_WINDOW],
  ["deepseek-reasoner", DEEPSEEK_WINDOW],
]);

/** The context window of `model` on the provider `provider`, in tokens. */
export function contextWindowOf(provider: string, model: string): number {
  if (provider === "deepseek") return DEEPSEEK_MODELS.get(model) ?? DEEPSEEK_WINDOW;
  return DEFAULT_CONTEXT_WINDOW;
}

/** Characters per token where no tokenizer counts them. */
const CHARS_PER_TOKEN = 4;
/** Tool outputs, newest first, that cutting leaves whole. */
export const KEEP_RECENT_TOOL_OUTPUTS = 3;
/** Tool outputs this short are left as they are (a stub would not be much shorter). */
const CUT_OUTPUTS_OVER_CHARS = 400;
const STUB_PREFIX = "[cut by compaction:";
/** The recent history kept verbatim is at most this share of the limit (but at least the last assistant message on). */
const KEPT_SHARE = 0.25;

export const SUMMARIZE_INSTRUCTION =
  "The conversation above is about to be compacted to fit the context window. Write a summary that lets you continue the task without it: " +
  "the user's requests and constraints, what was done and found (files, commands, results, decisions), what is left to do, and anything the user asked to remember. " +
  "Be specific and complete; answer with the summary only, in plain text, and call no tool.";

/** What compaction needs of a turn (or of `session/compact`). */
export interface CompactionContext {
  session: Session;
  provider: ModelProvider;
  model: string;
  system: string;
  tools: ToolSpec[];
  maxTokens?: number;
  window: number;
  compactAt: number;
  /** The session's current (or last) turn. */
  turn: number;
  signal: AbortSignal;
}

/** What a compaction did. */
export interface CompactionOutcome {
  compacted: boolean;
  /** The summary could not be made: the request failed, or the answer was empty or cut off. */
  failed?: boolean;
  /** The summary was made but was no shorter than what it would replace: its characters. */
  noGainChars?: number;
  /** The summarizing request's usage, when it ran and reported one. */
  usage?: Usage;
  /**
   * The model streamed something back: the request ran, and cost what `usage` says, or an
   * unknown amount without one (a budget then lets no further request start: cost.ts). Set
   * whatever became of the summary: one cut off or empty after its text was paid for all the same.
   */
  answered?: boolean;
  /** Why it did not compact, for the log. */
  why?: string;
}

/** The estimated prompt of the session's next request, in tokens. */
export function estimatePrompt(ctx: CompactionContext): number {
  const { session } = ctx;
  if (session.lastPrompt) {
    // The history may have shrunk since (old tool outputs cut to stubs): that counts too.
    const change = Math.ceil((session.historyChars - session.lastPrompt.historyChars) / CHARS_PER_TOKEN);
    return Math.max(0, session.lastPrompt.inputTokens + change);
  }
  return Math.ceil((overheadChars(ctx) + session.historyChars) / CHARS_PER_TOKEN);
}

const limitOf = (ctx: CompactionContext) => Math.floor(ctx.window * ctx.compactAt);
const overheadChars = (ctx: CompactionContext) => ctx.system.length + JSON.stringify(ctx.tools).length;

/**
 * Before a request: cuts old tool outputs, then summarizes (unless `mayRequestSummary` is false),
 * while the estimate passes the limit. `undefined` while the estimate is under the limit: nothing
 * was done, and a step that does not compact (almost every one) awaits nothing for it.
 */
export function compactIfNeeded(ctx: CompactionContext, mayRequestSummary = true): Promise<CompactionOutcome> | undefined {
  const tokens = estimatePrompt(ctx);
  return tokens <= limitOf(ctx) ? undefined : compactOverLimit(ctx, mayRequestSummary, { tokens, chars: ctx.session.historyChars });
}

async function compactOverLimit(ctx: CompactionContext, mayRequestSummary: boolean, before: { tokens: number; chars: number }): Promise<CompactionOutcome> {
  cutOldToolOutputs(ctx.session);
  if (estimatePrompt(ctx) <= limitOf(ctx)) return { compacted: false, why: "cutting old tool outputs was enough" };
  if (!mayRequestSummary) return { compacted: false, why: "no summary is asked for now" };
  return summarize(ctx, "auto", before);
}

/** Compacts now, whatever the estimate: after a refusal, or on `session/compact`. */
export function compactNow(ctx: CompactionContext, trigger: "refused" | "request"): Promise<CompactionOutcome> {
  const before = { tokens: estimatePrompt(ctx), chars: ctx.session.historyChars };
  cutOldToolOutputs(ctx.session);
  return summarize(ctx, trigger, before);
}

/** Replaces every tool output but the last `KEEP_RECENT_TOOL_OUTPUTS` (and short ones) with a stub. */
export function cutOldToolOutputs(session: Session): number {
  let seen = 0;
  let cut = 0;
  for (let i = session.messages.length - 1; i >= 0; i--) {
    const m = session.messages[i];
    if (m.role !== "tool" || ++seen <= KEEP_RECENT_TOOL_OUTPUTS) continue;
    const text = m.content.map((b) => b.text).join("\n");
    if (text.length <= CUT_OUTPUTS_OVER_CHARS || text.startsWith(STUB_PREFIX)) continue;
    const start = JSON.stringify(text.slice(0, 160));
    const stub = `${STUB_PREFIX} this ${m.name} output had ${text.length} characters; it began ${start}. Run the call again if you need it.]`;
    session.replaceMessage(i, { ...m, content: [{ type: "text", text: stub }] });
    cut++;
  }
  return cut;
}

/**
 * Where the kept history starts: the earliest assistant message from which the rest fits in
 * `KEPT_SHARE` of the limit, else the last assistant message; -1 when there is none after the
 * first message (nothing older to summarize).
 */
function keptStart(session: Session, limitTokens: number): number {
  const budget = limitTokens * CHARS_PER_TOKEN * KEPT_SHARE;
  let chars = 0;
  let start = -1;
  for (let i = session.messages.length - 1; i >= 1; i--) {
    const m = session.messages[i];
    chars += messageChars(m);
    if (m.role !== "assistant") continue;
    if (start !== -1 && chars > budget) break;
    start = i;
  }
  return start;
}

/** `before`: the estimate and the history's characters before anything was cut. */
async function summarize(ctx: CompactionContext, trigger: ContextCompactedEventData["trigger"], before: { tokens: number; chars: number }): Promise<CompactionOutcome> {
  const { session } = ctx;
  const start = keptStart(session, limitOf(ctx));
  // With nothing older than the kept part, or only an earlier summary, there is nothing to compact.
  const nothing = start === -1 || (start === 1 && session.messages[0].role === "user" && session.messages[0].synthetic === "summary");
  const older = nothing ? [] : session.messages.slice(0, start);
  if (older.length === 0) return { compacted: false, why: "no older history to summarize" };
  const request: ModelRequest = {
    model: ctx.model,
    system: ctx.system,
    messages: withInstruction(older),
    tools: ctx.tools,
    maxTokens: ctx.maxTokens,
    sessionId: session.id,
    parentSessionId: session.parentSessionId,
    turn: ctx.turn,
    purpose: "compaction",
  };
  let summary = "";
  let usage: Usage | undefined;
  let finish: string | undefined;
  /** Any content streamed back (a step's rule: loop.ts `answered`): the request ran, whatever its summary became. */
  let answered = false;
  try {
    for await (const batch of ctx.provider.stream(request, ctx.signal)) {
      if (ctx.signal.aborted) return { compacted: false, why: "aborted" };
      for (const part of batch) {
        if (part.type === "text-delta" || part.type === "reasoning-delta" || part.type === "tool-call-delta") {
          answered = true;
          if (part.type === "text-delta") summary += part.text;
        } else if (part.type === "usage") usage = part.usage;
        else if (part.type === "finish") finish = part.finishReason;
      }
    }
  } catch (error) {
    return { compacted: false, failed: true, usage, answered, why: `the summarizing request failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  summary = summary.trim();
  if (ctx.signal.aborted) return { compacted: false, usage, answered, why: "aborted" };
  if (!summary) return { compacted: false, failed: true, usage, answered, why: "the model gave an empty summary" };
  // Only an answer the model finished is a summary: one cut off (`length`) or turned into tool
  // calls would replace the history for good with half of what it said.
  if (finish !== "stop") return { compacted: false, failed: true, usage, answered, why: `the summarizing answer ended with '${finish ?? "no finish"}', not 'stop'` };
  const keptChars = session.messages.slice(start).reduce((sum, m) => sum + messageChars(m), 0);
  const summaryChars = summaryText(summary).length;
  // The estimate less what left the history (as estimatePrompt counts a change of it).
  const removed = before.chars - (summaryChars + keptChars);
  const tokensAfter = Math.max(0, before.tokens - Math.ceil(removed / CHARS_PER_TOKEN));
  // A summary no shorter than what it replaces would make the prompt no smaller: not recorded.
  if (tokensAfter >= before.tokens) {
    return { compacted: false, usage, answered, noGainChars: summaryChars, why: "the summary is no shorter than the history it would replace" };
  }
  await session.emit("context/compacted", { summary, tokensBefore: before.tokens, tokensAfter, keptFromSeq: session.seqOfMessage(start), turn: ctx.turn, trigger });
  return { compacted: true, usage, answered };
}

/** The older history with the instruction to summarize it last (in the last user message when it ends with one: no two user messages in a row). */
function withInstruction(older: ModelMessage[]): ModelMessage[] {
  const instruction: TextBlock = { type: "text", text: SUMMARIZE_INSTRUCTION };
  const last = older[older.length - 1];
  if (last.role === "user") return [...older.slice(0, -1), { ...last, content: [...last.content, instruction] }];
  return [...older, { role: "user", content: [instruction] }];
}
