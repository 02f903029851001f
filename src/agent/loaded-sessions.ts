/**
 * The sessions a runtime holds in memory, each with its log open, and the bound on the idle
 * ones: past `idleSessionsKept()` (at most `IDLE_SESSIONS_KEPT`, fewer under a low open-file
 * limit) the least recently used idle session is closed and dropped,
 * and reloaded from its log by its next prompt. This bounds the bridge's open files and memory
 * by the sessions in flight plus that many, however many sessions a client uses. Without a
 * session log nothing could be reloaded, so nothing is dropped.
 */
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import { isOutOfDescriptors } from "../tools/out-of-descriptors.js";
import { Session } from "./session.js";
import { openFileLimit } from "./turn-admission.js";
import type { RuntimeSink } from "./runtime-options.js";
import type { MemorySessionStore, SessionStore } from "./store/index.js";

/** Idle sessions kept loaded (their logs open) when sessions are logged, at most. */
export const IDLE_SESSIONS_KEPT = 64;

/**
 * The bound under an open-file `limit` (turn-admission.ts `openFileLimit`): a quarter of it,
 * between 4 and `IDLE_SESSIONS_KEPT`. A fixed 64 idle logs took every descriptor a `ulimit -n 64`
 * leaves after Node's own, so the running turns' other opens failed EMFILE — a turn's checkpoint
 * journal among them, the turn then left without a checkpoint (a warning on stderr only).
 */
export function idleSessionsKept(limit: number | undefined = openFileLimit()): number {
  if (limit === undefined) return IDLE_SESSIONS_KEPT;
  return Math.min(IDLE_SESSIONS_KEPT, Math.max(4, Math.floor(limit / 4)));
}

export interface LoadedSessionsOptions {
  store: SessionStore | MemorySessionStore;
  /** Whether sessions can be reloaded from a log (a durable store): only then are idle ones dropped. */
  durable: boolean;
  provider: string;
  model: string;
  sink: RuntimeSink;
  logger: Logger;
  redactor?: Redactor;
  /**
   * A session was dropped from memory (closed idle, unloaded, or found stale): what else this
   * process keeps for it goes too (its checkpoints' caches: runtime.ts), so that a bridge that
   * serves many sessions in turn keeps no more for them than for its loaded ones, and a session
   * reloaded after another process wrote it is not judged by what this one remembered.
   */
  dropped?(sessionId: string): void;
  /** The bound on idle sessions; default `idleSessionsKept()` (tests set it). */
  idleKept?: number;
}

export class LoadedSessions {
  private readonly sessions = new Map<string, Session>();
  /**
   * Loaded sessions with no turn running, least recently used first: kept only when sessions are
   * logged, the one case where an idle session is ever closed (a Set that one session leaves and
   * rejoins every turn is given a new backing store by V8 each time).
   */
  private readonly idle = new Set<string>();

  /** `idleSessionsKept` of this process's limit, read once. */
  private readonly idleKept: number;

  constructor(private readonly options: LoadedSessionsOptions) {
    this.idleKept = options.idleKept ?? idleSessionsKept();
  }

  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /**
   * The session, loaded (or created) and locked for a turn. A session held here that another
   * process wrote or deleted meanwhile is stale: it is dropped and loaded again from its log.
   * Throws the store's errors (`SessionLockedError`: another process holds it; it stays idle).
   */
  take(sessionId: string, parentSessionId?: string): Session {
    const known = this.sessions.get(sessionId);
    if (known) {
      if (known.lock()) {
        this.idle.delete(sessionId);
        return known;
      }
      this.sessions.delete(sessionId);
      this.idle.delete(sessionId);
      try {
        known.close();
      } finally {
        this.options.dropped?.(sessionId);
      }
    }
    const { store, provider, model, sink, redactor } = this.options;
    const header = { provider, model, ...(parentSessionId ? { parentSessionId } : {}) };
    const log = this.freeingIdle(() => store.open(sessionId, header));
    let session: Session;
    try {
      session = new Session(sessionId, log, (id, event, json) => sink.sessionEvent(id, event, json), parentSessionId ?? log.header.parentSessionId, redactor);
    } catch (error) {
      // A log this process cannot take up: closed, so that its lock does not outlive the failure.
      log.close();
      throw error;
    }
    this.sessions.set(sessionId, session);
    return session;
  }

  /**
   * A session's turn is over: it is unlocked (another process may write it now) and joins the
   * idle ones; the least recently used beyond the bound are closed. One that `isBusy` says has a
   * prompt waiting to take it is passed over and stays idle: dropped from the idle ones but left
   * loaded, it would keep its log open for good if that prompt were cancelled before taking it,
   * out of reach of the bound and of `closeIdle`.
   */
  release(session: Session, isBusy: (sessionId: string) => boolean): void {
    session.unlock();
    if (this.sessions.get(session.id) !== session) return; // already closed (closeAll)
    if (!this.options.durable) return;
    this.idle.delete(session.id);
    this.idle.add(session.id);
    let over = this.idle.size - this.idleKept;
    for (const id of this.idle) {
      if (over <= 0) break;
      if (isBusy(id)) continue;
      this.idle.delete(id);
      over--;
      const victim = this.sessions.get(id);
      if (!victim) continue;
      this.sessions.delete(id);
      this.closeOne(victim, "could not close the log of idle session");
    }
  }

  /**
   * `call`, once more when it ran out of file descriptors and closing the idle sessions' logs
   * gave some back: near its open-file limit a bridge holds most of its descriptors there, the
   * ones it can give back at once, so they are, before the call is called a failure. Only for a
   * call that changes nothing when it fails.
   */
  freeingIdle<T>(call: () => T): T {
    try {
      return call();
    } catch (error) {
      if (!isOutOfDescriptors(error) || !this.closeIdle()) throw error;
      return call();
    }
  }

  /**
   * Closes every idle session (each log synced, then closed; its next prompt reloads it from the
   * log): what to give back when the process is out of file descriptors. Whether any was
   * closed. Without a durable store nothing could be reloaded, so nothing is closed.
   */
  closeIdle(): boolean {
    if (!this.options.durable) return false;
    this.options.store.letGoKept(); // a sync each, the session just answered last: lock.ts `kept`
    let closed = false;
    for (const id of [...this.idle]) {
      this.idle.delete(id);
      const session = this.sessions.get(id);
      if (!session) continue;
      this.sessions.delete(id);
      this.closeOne(session, "could not close the log of idle session");
      closed = true;
    }
    return closed;
  }

  /** Closes and forgets one session (`session/delete`); false when it was not loaded. */
  unload(sessionId: string): boolean {
    const loaded = this.sessions.get(sessionId);
    if (!loaded) return false;
    this.sessions.delete(sessionId);
    this.idle.delete(sessionId);
    loaded.close();
    this.options.dropped?.(sessionId);
    return true;
  }

  /** fsyncs and closes every session log. */
  closeAll(): void {
    this.options.store.letGoKept(); // as closeIdle
    for (const session of this.sessions.values()) this.closeOne(session, "could not sync the log of session");
    this.sessions.clear();
    this.idle.clear();
  }

  /** Syncs and closes a session dropped from here: closed even when the sync fails, so its descriptor (and lock) is given back. */
  private closeOne(session: Session, what: string): void {
    const attempt = (step: () => void) => {
      try {
        step();
      } catch (error) {
        this.options.logger.warn(`${what} ${session.id}: ${(error as Error).message}`);
      }
    };
    attempt(() => session.sync());
    attempt(() => session.close());
    this.options.dropped?.(session.id);
  }
}
