/**
 * The sessions API's request handlers — `session/list`, `session/read`, `session/fork`,
 * `session/delete`, `session/compact` (shared/PROTOCOL.md, "Long sessions"; docs/PROTOCOL.md,
 * "Sessions API"; docs/long-sessions.md, "Compaction") —
 * mapping the store's answers to results and specific errors. They run on validated params
 * and a built runtime (server.ts does both).
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import {
  READ_LIMIT_DEFAULT,
  type SessionDeleteParams,
  type SessionDeleteResult,
  type SessionForkParams,
  type SessionForkResult,
  type SessionListResult,
  type SessionReadParams,
  type SessionReadResult,
} from "../protocol/sessions-types.js";
import type { SessionCompactParams, SessionCompactResult } from "../protocol/compaction-types.js";
import type { Logger } from "../log.js";
import type { Agent } from "./initialize.js";

/**
 * The store's failures: a corrupt log is `-32603` `session-log` like a prompt's; a session
 * another process has open for writing is `-32001` `session-locked`; no descriptor left to open
 * it with (EMFILE, ENFILE: a burst, a low `ulimit -n`) is `-32001` `out-of-descriptors`, to be
 * retried — never an internal error (docs/guarantees.md).
 */
export function logFailure(agent: Agent, error: unknown): never {
  const { SessionLogError, SessionLockedError } = agent.modules.store;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if ((error as Error | undefined)?.name === "OutOfDescriptorsError" || code === "EMFILE" || code === "ENFILE") {
    const message = (error as Error).name === "OutOfDescriptorsError" ? (error as Error).message : `the bridge is out of file descriptors (too many open files): ${(error as Error).message}; retry later, or raise the open-file limit (ulimit -n)`;
    throw new RpcError(ErrorCode.SessionBusy, message, { kind: "out-of-descriptors" });
  }
  if (error instanceof SessionLogError) throw new RpcError(ErrorCode.InternalError, error.message, { kind: "session-log" });
  if (error instanceof SessionLockedError) throw new RpcError(ErrorCode.SessionBusy, error.message, { kind: "session-locked", sessionId: error.sessionId });
  throw error;
}

function unknownSession(sessionId: string, field = "sessionId"): RpcError {
  return new RpcError(ErrorCode.InvalidParams, `invalid params: params.${field}: no session '${sessionId}' in this workspace`, { kind: "unknown-session", sessionId });
}

export function listSessions(agent: Agent, logger: Logger): SessionListResult {
  let listed: ReturnType<Agent["runtime"]["catalog"]["list"]>;
  try {
    listed = agent.runtime.catalog.list();
  } catch (error) {
    logFailure(agent, error);
  }
  const { sessions, problems } = listed;
  for (const problem of problems) logger.warn(`session/list left out a session log it could not read: ${problem}`);
  return { sessions };
}

export function readSession(agent: Agent, params: SessionReadParams): SessionReadResult {
  let page: SessionReadResult | undefined;
  try {
    page = agent.runtime.catalog.read(params.sessionId, params.afterSeq, params.limit ?? READ_LIMIT_DEFAULT);
  } catch (error) {
    logFailure(agent, error);
  }
  if (!page) throw unknownSession(params.sessionId);
  return page;
}

export function forkSession(agent: Agent, params: SessionForkParams): SessionForkResult {
  const { runtime } = agent;
  const { sessionId, newSessionId, turn } = params;
  // A running turn is not copied half-way: only turns that ended before it may be forked.
  const running = runtime.runningTurn(sessionId);
  if (running !== undefined) {
    if (turn === undefined || turn >= running) {
      throw new RpcError(
        ErrorCode.SessionBusy,
        `session ${sessionId} has turn ${running} running; fork it at an earlier turn (turn < ${running}) or once the turn has ended`,
        { kind: "session-busy", sessionId },
      );
    }
  }
  let refusal;
  try {
    refusal = runtime.catalog.fork(sessionId, newSessionId, turn);
  } catch (error) {
    logFailure(agent, error);
  }
  if (!refusal) return { sessionId: newSessionId };
  switch (refusal.kind) {
    case "unknown-session":
      throw unknownSession(sessionId);
    case "session-exists":
      throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.newSessionId: session '${newSessionId}' already exists; fork into a new id`, {
        kind: "session-exists",
        sessionId: newSessionId,
      });
    case "unknown-turn":
      throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.turn: session '${sessionId}' has ${refusal.turns} turn(s); turn ${turn} does not exist`, {
        kind: "unknown-turn",
        sessionId,
        turns: refusal.turns,
      });
  }
}

export function deleteSession(agent: Agent, params: SessionDeleteParams): SessionDeleteResult {
  try {
    return { deleted: agent.runtime.deleteSession(params.sessionId) };
  } catch (error) {
    if (error instanceof agent.modules.runtime.SessionBusyError) {
      throw new RpcError(ErrorCode.SessionBusy, error.message, { kind: "session-busy", sessionId: params.sessionId });
    }
    logFailure(agent, error);
  }
}

/** `session/compact`: summarizes a session's older history now (agent/compaction.ts); a busy session is -32001. */
export async function compactSession(agent: Agent, params: SessionCompactParams): Promise<SessionCompactResult> {
  let done: Promise<boolean>;
  try {
    done = agent.runtime.compact(params.sessionId);
  } catch (error) {
    if (error instanceof agent.modules.runtime.SessionBusyError) {
      throw new RpcError(ErrorCode.SessionBusy, `session ${params.sessionId} is busy (a prompt or a compaction is in flight); compact it once it is idle`, {
        kind: "session-busy",
        sessionId: params.sessionId,
      });
    }
    logFailure(agent, error);
  }
  return { compacted: await done };
}
