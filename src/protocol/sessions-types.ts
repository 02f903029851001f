/**
 * Wire types of the sessions API (shared/PROTOCOL.md, Additions, "Long sessions"):
 * `session/list`, `session/read`, `session/fork`, `session/delete`. One file per addition, as for
 * the others; `index.ts` re-exports them with `types.ts`, and each type is defined once.
 *
 * @module
 */
import type { SessionEvent } from "./types.js";

/** Params of `session/list`: none. */
export type SessionListParams = Record<string, never>;

/** One session of this workspace, as `session/list` gives it. */
export interface SessionListEntry {
  sessionId: string;
  /** The first user message's text, whitespace collapsed, at most `TITLE_MAX_CHARS` characters ("…" when cut); "" before the first prompt. */
  title: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds of the last durable event (of the fork itself, for a fork that has run no turn). */
  updatedAt: number;
  /** Turns started in this session (a fork counts the turns it copied). */
  turns: number;
  /** A subagent session: the session whose `task` call created it; a fork: the session it was forked from. */
  parentSessionId?: string;
  /** Present with `parentSessionId`: how the session came from its parent. */
  origin?: "task" | "fork";
}

/** Result of `session/list`: newest `updatedAt` first. */
export interface SessionListResult {
  sessions: SessionListEntry[];
  /**
   * The absolute folder that holds this workspace's logs: a session's log is
   * `<logFolder>/<sessionId>.jsonl` once it has been prompted. Absent with `--no-session-log`.
   * Reported here, not by `initialize`: naming the folder hashes the workspace path, and
   * nothing loads `node:crypto` before the `initialize` response (bench/README.md, "Cold start").
   */
  logFolder?: string;
}

/** Params of `session/read`. */
export interface SessionReadParams {
  sessionId: string;
  /** Only events with a greater `seq` (default: from the first). */
  afterSeq?: number;
  /** At most this many events, 1 … `READ_LIMIT_MAX` (default `READ_LIMIT_DEFAULT`). */
  limit?: number;
}

/** Result of `session/read`. */
export interface SessionReadResult {
  /** Durable events, in log order (`seq` increasing, with gaps where live-only events were). */
  events: SessionEvent[];
  /** Present when more events follow: pass it as `afterSeq` for the next page (the `seq` of the last event here). */
  nextSeq?: number;
}

/** Params of `session/fork`. */
export interface SessionForkParams {
  sessionId: string;
  /** The new session's id: must not name an existing session. */
  newSessionId: string;
  /** Copy the history up to the end of this turn (0 … the source's turns; default: all of it). */
  turn?: number;
}

/** Result of `session/fork`: the new session's id. */
export interface SessionForkResult {
  sessionId: string;
}

/** Params of `session/delete`. */
export interface SessionDeleteParams {
  sessionId: string;
}

/** Result of `session/delete`: `false` when no such session existed. */
export interface SessionDeleteResult {
  deleted: boolean;
}

/**
 * Session ids are file names in the durable store, so they are kept to a safe alphabet. Here,
 * not in schemas.ts, so that the store can test an id without loading zod (schemas.ts is a chunk
 * of its own in the single executable).
 */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Events per `session/read` page when `limit` is not given. */
export const READ_LIMIT_DEFAULT = 200;
/** The largest `limit` `session/read` accepts. */
export const READ_LIMIT_MAX = 1000;
/** A page also ends once its events pass this many bytes of JSON (always at least one event). */
export const READ_PAGE_BYTES = 8 * 1024 * 1024;
/** Titles are cut to this many characters (Unicode code points). */
export const TITLE_MAX_CHARS = 80;
