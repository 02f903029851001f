/**
 * A session: its event sequence, its durable log and the conversation it implies.
 *
 * Every event takes the next `seq` (live-only ones too). A durable event is appended to the
 * log before it is announced; the announcement is awaited so that a slow client slows the turn
 * down instead of growing a buffer.
 */
import {
  LIVE_ONLY_EVENT_TYPES,
  type AssistantContentBlock,
  type HookDecisionEventData,
  type HookRequestEventData,
  type SessionEvent,
  type SessionEventDataMap,
  type SessionEventType,
  type TextBlock,
} from "../protocol/index.js";
import type { ModelMessage } from "../providers/types.js";
import { historyEdited } from "../providers/history-tally.js";
import { noRedaction, type Redactor } from "../redact.js";
import { jsonText } from "../json-line.js";
import { chunkDataJson } from "./chunk-json.js";
import { decimalText } from "./decimal.js";
import { noSeqLeft, type SessionLog } from "./store/index.js";
import { TurnStarts } from "./turn-starts.js";

/**
 * Where a session's events are announced (the server turns them into notifications). `json`:
 * the event's JSON text, when it was encoded whole. Returns `undefined` when the client has room
 * now, else a promise that resolves when it has.
 */
export type EventAnnouncer = (sessionId: string, event: SessionEvent, json: string | undefined) => Promise<void> | undefined;

export class Session {
  private seq: number;
  private turns: number;
  /** The conversation as the model sees it, rebuilt from durable events (from the last `context/compacted` on). */
  readonly messages: ModelMessage[] = [];
  /** The `seq` of the event each message of `messages` came from (a summary: its `context/compacted`). */
  private readonly messageSeqs: number[] = [];
  /** Characters of `messages` (see `messageChars`), kept up to date as they change. */
  historyChars = 0;
  /**
   * The prompt size of the last model request that reported usage, and the history's
   * characters then: the next request is estimated from it (agent/compaction.ts). After a
   * compaction: its `tokensAfter`. Unset in a new or resumed session until a request reports usage.
   */
  lastPrompt: { inputTokens: number; historyChars: number } | undefined;
  /** Content of the last recorded assistant message. */
  lastAssistantContent: AssistantContentBlock[] | undefined;
  /** Tool calls of the last assistant message that have no result yet (callId → tool name). */
  private readonly unanswered = new Map<string, string>();
  /** The `seq` of each turn's user message (turns replayed since the last compaction): where a rewind cuts the history. */
  private readonly turnStarts = new TurnStarts();
  private lastUserSeq = 0;
  /** Hook requests of the running (or, in a log cut off mid-turn, the last) turn with no decision yet, by hookId. */
  private readonly pendingHooks = new Map<string, HookRequestEventData>();
  /**
   * The callIds of the session's `tool/request`s (its client tool calls), made at the first one:
   * `session/tool_result` answers by callId alone, so a model that repeats an id in a later step
   * or turn must get another one (`callIdAsked`), or a late answer to the earlier request would
   * settle the new call. Rebuilt from the log on load, so it holds across a restart.
   */
  private askedCallIds: Set<string> | undefined;
  /**
   * An event's text between `seq` and the data, for the last time: a streamed step's chunks
   * share it, so it is made once, not per chunk (every concatenation is a string object to
   * collect). The text before `seq` is the type's own (`eventHead`).
   */
  private readonly middle = { time: -1, text: "" };

  constructor(
    readonly id: string,
    private readonly log: SessionLog | undefined,
    private readonly announce: EventAnnouncer,
    readonly parentSessionId?: string,
    private readonly redactor: Redactor = noRedaction,
  ) {
    this.seq = 0;
    this.turns = 0;
    for (const event of log?.loadedEvents ?? []) this.absorb(event);
    log?.releaseLoaded();
  }

  /** The number the next turn takes (1-based). */
  nextTurnNumber(): number {
    return this.turns + 1;
  }

  /**
   * Records (when durable) and announces an event. `undefined` when the client has room for
   * more now, else a promise that resolves when it has: a caller in a loop awaits only then.
   */
  emit<T extends SessionEventType>(type: T, data: SessionEventDataMap[T]): Promise<void> | undefined {
    // Past 2^53−1, `seq + 1` rounds back to `seq`: events would share one. Refused instead, before
    // anything is recorded or announced (a log is refused there on load already: resume.ts).
    if (this.seq >= Number.MAX_SAFE_INTEGER) throw noSeqLeft(this.log?.file ? `session log ${this.log.file}` : `session ${this.id}`, this.seq);
    const seq = ++this.seq;
    const time = Date.now();
    // In place: the recorded event, the history built from it and what the caller still holds
    // (a turn's reason, which becomes the prompt response) stay one and the same clean value.
    if (this.redactor.active) this.redactor.inPlace(data);
    // Two object literals, so two allocation sites. V8 allocates a site's objects straight into
    // the old generation once nearly all of them outlive a scavenge (allocation-site
    // pretenuring). A durable event is kept (the store and the history hold it), a live-only one
    // is dropped once announced: made at one site, a one-chunk turn's events stay just under
    // V8's line, and every kept event is copied by two scavenges, each pause the longer for it.
    const live = LIVE_ONLY_EVENT_TYPES.has(type);
    const event = (live ? { type, seq, time, data } : { type, seq, time, data }) as SessionEvent;
    // Encoded once, for the log line and the notification both. The text is what
    // JSON.stringify(event) gives: the keys in this order (log-lines.ts reads them from a line's
    // head), `type` a constant of the protocol that needs no escaping, `seq` and `time` integers.
    // Data holding a long string is left to each writer to encode piece by piece (json-line.ts).
    const dataJson = type === "assistant/chunk" ? chunkDataJson(data as SessionEventDataMap["assistant/chunk"]) : jsonText(data);
    let json: string | undefined;
    if (dataJson !== undefined) {
      const { middle } = this;
      if (middle.time !== time) {
        middle.time = time;
        middle.text = `,"time":${time},"data":`;
      }
      json = `${eventHead(type)}${decimalText(seq)}${middle.text}${dataJson}}`;
    }
    if (!live) {
      this.log?.append(event, json);
      this.absorb(event);
    }
    return this.announce(this.id, event, json);
  }

  /** The tool calls of the last assistant message that have no result yet; at a turn's start, those a stopped bridge left. */
  unansweredCalls(): Array<{ callId: string; name: string }> {
    return [...this.unanswered].map(([callId, name]) => ({ callId, name }));
  }

  /** Whether an earlier client tool request of this session carried `callId` (an arrow: the loop passes it on as it is). */
  readonly callIdAsked = (callId: string): boolean => this.askedCallIds?.has(callId) === true;

  /** Whether there are calls without a result or hook requests without a decision (the two below). */
  get hasLeftovers(): boolean {
    return this.unanswered.size > 0 || this.pendingHooks.size > 0;
  }

  /** Hook requests a stopped bridge left without a decision (agent/hooks.ts `settleLeftoverHooks`). */
  leftoverHooks(): HookRequestEventData[] {
    return [...this.pendingHooks.values()];
  }

  /** Makes what was appended durable. */
  sync(): void {
    this.log?.sync();
  }

  close(): void {
    this.log?.close();
  }

  /** Takes the log's lock for a turn (SessionLog.lock); `false`: another process changed the log, reload the session. */
  lock(): boolean {
    return this.log?.lock() ?? true;
  }

  /** The turn is over: another process may write the session now. */
  unlock(): void {
    this.log?.unlock();
  }

  /** Replaces a message in place (a tool output cut by compaction), keeping `historyChars` right. Memory only: the log keeps the whole output. */
  replaceMessage(index: number, message: ModelMessage): void {
    this.historyChars += messageChars(message) - messageChars(this.messages[index]);
    this.messages[index] = message;
    historyEdited(this.messages);
  }

  /**
   * Whether the history can be cut back to before `turn` (`session/rewound`): its user message
   * is in the history, not folded into a compaction summary made after it started.
   */
  canCutTo(turn: number): boolean {
    const start = this.turnStarts.get(turn);
    if (start === undefined) return false;
    const first = this.messages[0];
    return !(first?.role === "user" && first.synthetic === "summary" && this.messageSeqs[0] > start);
  }

  /** The `seq` of the event message `index` came from. */
  seqOfMessage(index: number): number {
    return this.messageSeqs[index];
  }

  private push(message: ModelMessage, seq: number): void {
    this.messages.push(message);
    this.messageSeqs.push(seq);
    this.historyChars += messageChars(message);
  }

  /**
   * `session/rewound`: the history loses turn `turn` and every later one (turn numbers go on
   * from the last one). Calls the kept history leaves without a result are unanswered again,
   * and get one before the next user message, as after a crash. A turn folded into a later
   * compaction summary is not cut (the runtime refuses that rewind; a log edited to hold one
   * keeps its history).
   */
  private cutTo(turn: number): void {
    const start = this.turnStarts.get(turn);
    if (start === undefined || !this.canCutTo(turn)) return;
    let cut = this.messageSeqs.findIndex((s) => s >= start);
    if (cut < 0) cut = this.messages.length;
    this.messages.splice(cut);
    this.messageSeqs.splice(cut);
    this.turnStarts.dropFrom(turn);
    this.historyChars = this.messages.reduce((n, m) => n + messageChars(m), 0);
    this.lastPrompt = undefined;
    this.unanswered.clear();
    // A hook waits only in the last turn, which the cut takes: its request goes with it.
    this.pendingHooks.clear();
    this.lastAssistantContent = undefined;
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (m.role !== "assistant") continue;
      this.lastAssistantContent = m.content;
      const answered = new Set(this.messages.slice(i + 1).flatMap((r) => (r.role === "tool" ? [r.callId] : [])));
      for (const block of m.content) if (block.type === "tool-call" && !answered.has(block.id)) this.unanswered.set(block.id, block.name);
      break;
    }
    historyEdited(this.messages);
  }

  /**
   * What a hook's answer does to the history (agent/hooks.ts): a prompt-submit `block` takes the
   * turn's user message out (the model never sees a blocked prompt, in this turn or a later
   * one); its `context` is appended to that message as a text block; a stop hook's `continue`
   * joins as a user-role message within the turn (synthetic: it starts no turn). The user
   * message is the last one: a prompt-submit hook runs before anything else of its turn.
   */
  private applyHookDecision(decision: HookDecisionEventData, seq: number): void {
    if (decision.skipped !== undefined) return;
    const last = this.messages.length - 1;
    const userMessage = last >= 0 && this.messages[last].role === "user" && !(this.messages[last] as { synthetic?: string }).synthetic;
    if (decision.hook === "prompt-submit" && userMessage) {
      if (decision.block !== undefined) {
        this.historyChars -= messageChars(this.messages[last]);
        this.messages.pop();
        this.messageSeqs.pop();
        historyEdited(this.messages);
      } else if (decision.context) {
        const message = this.messages[last];
        this.replaceMessage(last, { ...message, content: [...(message.content as TextBlock[]), { type: "text", text: decision.context }] } as ModelMessage);
      }
    } else if (decision.hook === "stop" && decision.continue !== undefined) {
      this.push({ role: "user", content: [{ type: "text", text: decision.continue }], synthetic: "hook" }, seq);
    }
  }

  private absorb(event: SessionEvent): void {
    if (event.seq > this.seq) this.seq = event.seq;
    const { seq } = event;
    switch (event.type) {
      case "user/message":
      // A steer (`session/steer`) is a user message in the middle of a turn: recorded only
      // between steps (agent/steer.ts), so it never stands between a call and its result.
      case "user/steer":
        // A log cut off mid-turn (the process was killed) can hold tool calls without results;
        // models refuse such a history, so each is answered before the next user message.
        // Cleared only when it holds some: `Map.prototype.clear` gives the map a new table even
        // when it is empty, and a session's maps live in V8's old generation, so an unconditional
        // clear would leave a table of garbage there every turn (a page touched anew every few
        // turns, and the old generation filled towards its next full collection).
        if (this.unanswered.size > 0) {
          for (const [callId, name] of this.unanswered) {
            const text = "not run: the turn was interrupted before this tool call ran";
            this.push({ role: "tool", callId, name, content: [{ type: "text", text }], isError: true }, seq);
          }
          this.unanswered.clear();
        }
        this.push({ role: "user", content: event.data.content }, seq);
        this.lastUserSeq = seq;
        break;
      case "turn/start":
        this.turns = Math.max(this.turns, event.data.turn);
        this.turnStarts.set(event.data.turn, this.lastUserSeq);
        break;
      case "session/rewound":
        this.cutTo(event.data.turn);
        break;
      case "checkpoint":
        // A rewind's own checkpoint takes a turn number of its own (checkpoints/rewind-session.ts).
        // Not a field the history needs (store/event-shape.ts does not check it): a log edited to
        // hold no number there leaves the count alone.
        if (Number.isSafeInteger(event.data.turn)) this.turns = Math.max(this.turns, event.data.turn);
        break;
      case "turn/end":
        // A hook still waiting when its turn ended was abandoned by a cancel: not a leftover.
        // (Only when it holds some, as `unanswered` at a user message.)
        if (this.pendingHooks.size > 0) this.pendingHooks.clear();
        break;
      case "hook/request":
        this.pendingHooks.set(event.data.hookId, event.data);
        break;
      case "tool/request":
        (this.askedCallIds ??= new Set()).add(event.data.callId);
        break;
      case "hook/decision":
        this.pendingHooks.delete(event.data.hookId);
        this.applyHookDecision(event.data, seq);
        break;
      case "assistant/message":
        this.lastAssistantContent = event.data.content;
        this.push({ role: "assistant", content: event.data.content }, seq);
        for (const block of event.data.content) if (block.type === "tool-call") this.unanswered.set(block.id, block.name);
        break;
      case "output/reminder":
        this.push({ role: "user", content: [{ type: "text", text: event.data.text }], synthetic: "reminder" }, seq);
        break;
      case "tool/result":
        this.unanswered.delete(event.data.callId);
        this.push({ role: "tool", callId: event.data.callId, name: event.data.name, content: event.data.content, isError: event.data.isError }, seq);
        break;
      case "context/compacted": {
        // The history before `keptFromSeq` becomes the summary; what came from it on stays.
        const { keptFromSeq, turn } = event.data;
        // An earlier summary stands first with its own event's seq, later than the messages kept
        // after it: it is never part of what is kept (the new summary replaces it).
        const first = this.messages[0];
        const from = first?.role === "user" && first.synthetic === "summary" ? 1 : 0;
        let keep = this.messageSeqs.findIndex((s, i) => i >= from && s >= keptFromSeq);
        if (keep < 0) keep = this.messages.length;
        const kept = this.messages.splice(keep);
        const keptSeqs = this.messageSeqs.splice(keep);
        this.messages.length = 0;
        this.messageSeqs.length = 0;
        this.historyChars = 0;
        this.push({ role: "user", content: [{ type: "text", text: summaryText(event.data.summary) }], synthetic: "summary" }, seq);
        kept.forEach((m, i) => this.push(m, keptSeqs[i]));
        this.turns = Math.max(this.turns, turn);
        // The next request is estimated from the compacted prompt's estimate.
        // (A log edited by hand may hold no number there: then the next request is estimated afresh.)
        this.lastPrompt = Number.isFinite(event.data.tokensAfter) ? { inputTokens: event.data.tokensAfter, historyChars: this.historyChars } : undefined;
        break;
      }
      default:
        break;
    }
  }
}

/**
 * An event's JSON text before its `seq`, made once per event type for the process: a turn's
 * events take turns between types, so a text kept for the last type only was made anew for
 * nearly every event. The types are the protocol's few constants.
 */
const heads = new Map<SessionEventType, string>();
function eventHead(type: SessionEventType): string {
  let head = heads.get(type);
  if (head === undefined) heads.set(type, (head = `{"type":"${type}","seq":`));
  return head;
}

/** The text of the user-role message a compaction summary becomes. */
export function summaryText(summary: string): string {
  return `[Earlier conversation, compacted to fit the context window. Summary:]\n\n${summary}`;
}

/** Characters of a message: its text blocks, plus the JSON of each tool call's arguments. */
export function messageChars(message: ModelMessage): number {
  let chars = 0;
  for (const block of message.content) {
    chars += block.type === "tool-call" ? (block.rawArguments ?? block.argumentsText ?? JSON.stringify(block.arguments)).length : block.text.length;
  }
  return chars;
}
