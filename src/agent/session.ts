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
  type SessionEvent,
  type SessionEventDataMap,
  type SessionEventType,
} from "../protocol/index.js";
import type { ModelMessage } from "../providers/types.js";
import { noRedaction, type Redactor } from "../redact.js";
import type { SessionLog } from "./store.js";

/** Where a session's events are announced (the server turns them into notifications). */
export type EventAnnouncer = (sessionId: string, event: SessionEvent) => Promise<void>;

export class Session {
  private seq: number;
  private turns: number;
  /** The conversation as the model sees it, rebuilt from durable events. */
  readonly messages: ModelMessage[] = [];
  /** Content of the last recorded assistant message. */
  lastAssistantContent: AssistantContentBlock[] | undefined;
  /** Tool calls of the last assistant message that have no result yet (callId → tool name). */
  private readonly unanswered = new Map<string, string>();

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

  /** Records (when durable) and announces an event; resolves when the client has room for more. */
  emit<T extends SessionEventType>(type: T, data: SessionEventDataMap[T]): Promise<void> {
    this.seq += 1;
    // In place: the recorded event, the history built from it and what the caller still holds
    // (a turn's reason, which becomes the prompt response) stay one and the same clean value.
    if (this.redactor.active) this.redactor.inPlace(data);
    const event = { type, seq: this.seq, time: Date.now(), data } as SessionEvent;
    if (!LIVE_ONLY_EVENT_TYPES.has(type)) {
      this.log?.append(event);
      this.absorb(event);
    }
    return this.announce(this.id, event);
  }

  /** The tool calls of the last assistant message that have no result yet; at a turn's start, those a stopped bridge left. */
  unansweredCalls(): Array<{ callId: string; name: string }> {
    return [...this.unanswered].map(([callId, name]) => ({ callId, name }));
  }

  /** Makes what was appended durable. */
  sync(): void {
    this.log?.sync();
  }

  close(): void {
    this.log?.close();
  }

  private absorb(event: SessionEvent): void {
    if (event.seq > this.seq) this.seq = event.seq;
    switch (event.type) {
      case "user/message":
        // A log cut off mid-turn (the process was killed) can hold tool calls without results;
        // models refuse such a history, so each is answered before the next user message.
        for (const [callId, name] of this.unanswered) {
          const text = "not run: the turn was interrupted before this tool call ran";
          this.messages.push({ role: "tool", callId, name, content: [{ type: "text", text }], isError: true });
        }
        this.unanswered.clear();
        this.messages.push({ role: "user", content: event.data.content });
        break;
      case "turn/start":
        this.turns = Math.max(this.turns, event.data.turn);
        break;
      case "assistant/message":
        this.lastAssistantContent = event.data.content;
        this.messages.push({ role: "assistant", content: event.data.content });
        for (const block of event.data.content) if (block.type === "tool-call") this.unanswered.set(block.id, block.name);
        break;
      case "output/reminder":
        this.messages.push({ role: "user", content: [{ type: "text", text: event.data.text }], synthetic: true });
        break;
      case "tool/result":
        this.unanswered.delete(event.data.callId);
        this.messages.push({ role: "tool", callId: event.data.callId, name: event.data.name, content: event.data.content, isError: event.data.isError });
        break;
      default:
        break;
    }
  }
}
