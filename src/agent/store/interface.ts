/**
 * The session store's interface, apart from its implementations: what a session does with its
 * log (`SessionLog`) and what the sessions API asks of a store (`SessionCatalog`). The file
 * store (file-store.ts, file-catalog.ts) and the memory store of `--no-session-log`
 * (memory-store.ts) implement both; a session (agent/session.ts) and the sessions API
 * (`AgentRuntime.catalog`) see only these.
 *
 * @module
 */
import type { SessionEvent, SessionListEntry, SessionReadResult } from "../../protocol/index.js";
import type { SessionHeader } from "./log-format.js";

/** What the runtime gives a store to open a session with: the header less what the store fills in. */
export type NewSessionHeader = Omit<SessionHeader, "type" | "version" | "sessionId" | "workspace" | "createdAt">;

/** One session's open log. */
export interface SessionLog {
  readonly header: SessionHeader;
  /** The log's file; absent where the log is kept in memory only (`--no-session-log`). */
  readonly file?: string;
  /** The durable events found when the log was opened (empty for a new session), until `releaseLoaded`. */
  readonly loadedEvents: SessionEvent[];
  /** The session has absorbed `loadedEvents`: the log stops holding them (their wrappers are most of a resumed session's memory). */
  releaseLoaded(): void;
  /** `json`: the event's JSON text when it was encoded whole (session.ts `emit`); absent: the log encodes it. */
  append(event: SessionEvent, json?: string): void;
  /**
   * Takes the session's lock for a turn (throws `SessionLockedError` when another process holds
   * it). `false`: the file changed since this log last wrote it (another process wrote or
   * deleted it): close this log and open the session again.
   */
  lock(): boolean;
  /** The turn ended: the lock is given up (a file log's a moment later: file-store.ts); the log stays open for the next `lock`. */
  unlock(): void;
  /** Whether the file still is what this log wrote (no other process wrote or deleted it since). */
  current(): boolean;
  /** fsync: what was appended survives a power loss. */
  sync(): void;
  close(): void;
  /** What `session/list` says of this session now. */
  entry(): SessionListEntry;
}

/** A fork whose completion failed and which could not be removed again: `cause` is why it failed. */
export class ForkNotUndoneError extends Error {
  constructor(
    readonly newSessionId: string,
    readonly undo: Error,
    cause: unknown,
  ) {
    super(`the fork ${newSessionId} could not be completed, nor removed again: ${undo.message}`, { cause });
    this.name = "ForkNotUndoneError";
  }
}

/**
 * Runs `complete` after a fork was made; if it throws, `remove` takes the fork away again (see
 * `SessionCatalog.fork`). One place for both stores' undo.
 */
export function completeFork(newSessionId: string, complete: (() => void) | undefined, remove: () => void): void {
  if (!complete) return;
  try {
    complete();
  } catch (error) {
    try {
      remove();
    } catch (undo) {
      throw new ForkNotUndoneError(newSessionId, undo as Error, error);
    }
    throw error;
  }
}

/** Why a fork was refused. */
export type ForkRefusal = { kind: "unknown-session" } | { kind: "session-exists" } | { kind: "unknown-turn"; turns: number };

/** What a session store offers the sessions API (shared/PROTOCOL.md, "Long sessions"). */
export interface SessionCatalog {
  /** Whether sessions outlive the process (a file store) or not (`--no-session-log`). */
  readonly durable: boolean;
  /** This workspace's sessions, newest `updatedAt` first; `problems` names logs that could not be listed. */
  list(): { sessions: SessionListEntry[]; problems: string[] };
  /** A page of durable events; `undefined` for an unknown session. */
  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined;
  /**
   * Copies the history up to the end of `turn` (default: all) into `newSessionId`. `complete`
   * (the fork's checkpoints) runs before the fork can be found under its id (the file store
   * names its log only after it), under the locks the fork holds: no one, another bridge
   * neither, can list, read, prompt or fork into the fork before it is whole, and a bridge
   * killed before then leaves no fork. If `complete` throws, what it made is removed there and
   * the error passes on (`ForkNotUndoneError` when the removal failed too).
   */
  fork(sessionId: string, newSessionId: string, turn: number | undefined, complete?: () => void): ForkRefusal | undefined;
  /** Removes a session that no one has open (the runtime unloads it first); `false` when it did not exist. */
  delete(sessionId: string): boolean;
  /** The live entry of a session open in this process, if it is. */
  openEntry(sessionId: string): SessionListEntry | undefined;
}
