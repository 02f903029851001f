/**
 * The session store of `--no-session-log`: nothing is written anywhere, and the sessions API
 * answers from memory for as long as the process lives — `session/list` lists the sessions
 * this process has run, `session/read` pages their durable events, `session/fork` copies one
 * in memory, `session/delete` forgets it. A new process knows none of them.
 *
 * The events kept here share their data with the conversation the session builds from them,
 * so keeping them costs little beyond the event wrappers.
 *
 * @module
 */
import { READ_PAGE_BYTES, type SessionListEntry, type SessionReadResult } from "../../protocol/sessions-types.js";
import type { SessionEvent } from "../../protocol/types.js";
import { completeFork, type ForkRefusal, type NewSessionHeader, type SessionCatalog, type SessionLog } from "./interface.js";
import { forkHeader, isSessionId, type SessionHeader } from "./log-format.js";
import { sortEntries, SummaryTracker } from "./summary.js";

interface Kept {
  header: SessionHeader;
  events: SessionEvent[];
  summary: SummaryTracker;
}

export class MemorySessionStore implements SessionCatalog {
  readonly durable = false;
  private readonly kept = new Map<string, Kept>();
  private readonly opened = new Set<string>();

  constructor(readonly workspace: string) {}

  /** Nothing: a memory log takes no lock (file-store.ts `letGoKept`). */
  letGoKept(): void {}

  open(sessionId: string, header: NewSessionHeader): SessionLog {
    if (!isSessionId(sessionId)) throw new Error(`not a session id: ${JSON.stringify(sessionId.slice(0, 200))}`);
    let kept = this.kept.get(sessionId);
    if (!kept) {
      const full: SessionHeader = { type: "session-header", version: 1, sessionId, workspace: this.workspace, createdAt: Date.now(), ...header };
      kept = { header: full, events: [], summary: new SummaryTracker(full) };
      this.kept.set(sessionId, kept);
    }
    this.opened.add(sessionId);
    const { header: full, events, summary } = kept;
    let loaded = events.slice();
    return {
      header: full,
      get loadedEvents() {
        return loaded;
      },
      releaseLoaded: () => {
        loaded = [];
      },
      append: (event) => {
        events.push(event);
        summary.absorb(event);
      },
      // One process holds a memory session: nothing to lock, and nothing else writes it.
      lock: () => true,
      unlock: () => undefined,
      current: () => true,
      sync: () => undefined,
      close: () => {
        this.opened.delete(sessionId);
      },
      entry: () => summary.entry(),
    };
  }

  list(): { sessions: SessionListEntry[]; problems: string[] } {
    return { sessions: sortEntries([...this.kept.values()].map((k) => k.summary.entry())), problems: [] };
  }

  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined {
    const kept = this.kept.get(sessionId);
    if (!kept) return undefined;
    const { events } = kept;
    // The first index whose seq exceeds afterSeq (seq increases along the events).
    let low = 0;
    let high = events.length;
    while (afterSeq !== undefined && low < high) {
      const mid = (low + high) >> 1;
      if (events[mid]!.seq > afterSeq) high = mid;
      else low = mid + 1;
    }
    const page: SessionEvent[] = [];
    let bytes = 0;
    let index = low;
    for (; index < events.length && page.length < limit; index++) {
      const size = JSON.stringify(events[index]).length;
      if (page.length > 0 && bytes + size > READ_PAGE_BYTES) break;
      page.push(events[index]!);
      bytes += size;
    }
    return index < events.length && page.length > 0 ? { events: page, nextSeq: page.at(-1)!.seq } : { events: page };
  }

  fork(sessionId: string, newSessionId: string, turn: number | undefined, complete?: () => void): ForkRefusal | undefined {
    const source = this.kept.get(sessionId);
    if (!source) return { kind: "unknown-session" };
    if (this.kept.has(newSessionId)) return { kind: "session-exists" };
    let turns = 0;
    let cut = source.events.length;
    for (let i = 0; i < source.events.length; i++) {
      const event = source.events[i]!;
      if (event.type === "user/message" && turn !== undefined && turns >= turn) {
        cut = i;
        break;
      }
      if (event.type === "turn/start") turns = Math.max(turns, event.data.turn);
    }
    if (turn !== undefined && turn > turns) return { kind: "unknown-turn", turns };
    const header = forkHeader(source.header, this.workspace, sessionId, newSessionId, turn ?? turns);
    // Events are never changed once recorded, so the fork can share them with its source.
    const events = source.events.slice(0, cut);
    const summary = new SummaryTracker(header);
    for (const event of events) summary.absorb({ ...event, time: Math.min(event.time, header.createdAt) });
    this.kept.set(newSessionId, { header, events, summary });
    completeFork(newSessionId, complete, () => this.kept.delete(newSessionId));
    return undefined;
  }

  delete(sessionId: string): boolean {
    if (this.opened.has(sessionId)) throw new Error(`session ${sessionId} is open: unload it before deleting it`);
    return this.kept.delete(sessionId);
  }

  openEntry(sessionId: string): SessionListEntry | undefined {
    return this.opened.has(sessionId) ? this.kept.get(sessionId)?.summary.entry() : undefined;
  }
}
