/**
 * The sessions API's request handlers — `session/list`, `session/read`, `session/fork`,
 * `session/delete`, `session/compact` (shared/PROTOCOL.md, "Long sessions"; docs/PROTOCOL.md,
 * "Sessions API"; docs/long-sessions.md, "Compaction") —
 * mapping the store's answers to results and specific errors (its failures: rpc-errors.ts). They run on validated params
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
import { toRpcError } from "./rpc-errors.js";

function unknownSession(sessionId: string, field = "sessionId"): RpcError {
  return new RpcError(ErrorCode.InvalidParams, `invalid params: params.${field}: no session '${sessionId}' in this workspace`, { kind: "unknown-session", sessionId });
}

export function listSessions(agent: Agent, logger: Logger): SessionListResult {
  let listed: ReturnType<Agent["runtime"]["catalog"]["list"]>;
  try {
    listed = agent.runtime.freeingIdle(() => agent.runtime.catalog.list());
  } catch (error) {
    throw toRpcError(agent.modules, error);
  }
  const { sessions, problems } = listed;
  for (const problem of problems) logger.warn(`session/list left out a session log it could not read: ${problem}`);
  return agent.logFolder === undefined ? { sessions } : { sessions, logFolder: agent.logFolder };
}

export function readSession(agent: Agent, params: SessionReadParams): SessionReadResult {
  let page: SessionReadResult | undefined;
  try {
    page = agent.runtime.freeingIdle(() => agent.runtime.catalog.read(params.sessionId, params.afterSeq, params.limit ?? READ_LIMIT_DEFAULT));
  } catch (error) {
    throw toRpcError(agent.modules, error);
  }
  if (!page) throw unknownSession(params.sessionId);
  return page;
}

export function forkSession(agent: Agent, params: SessionForkParams, logger: Logger): SessionForkResult {
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
    // A fork that fails leaves no fork (runtime.forkSession): so it can be tried again whole.
    refusal = runtime.freeingIdle(() => runtime.forkSession(sessionId, newSessionId, turn));
  } catch (error) {
    if (!(error instanceof agent.modules.store.ForkNotUndoneError)) throw toRpcError(agent.modules, error);
    logger.warn(`session/fork could not remove the fork ${newSessionId} it failed to make: ${error.undo.message}`);
    throw toRpcError(agent.modules, error.cause);
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
    throw toRpcError(agent.modules, error);
  }
}

/** `session/compact`: summarizes a session's older history now (agent/compaction.ts); a busy session is -32001. */
export async function compactSession(agent: Agent, params: SessionCompactParams): Promise<SessionCompactResult> {
  let done: Promise<boolean>;
  try {
    done = agent.runtime.compact(params.sessionId);
  } catch (error) {
    throw toRpcError(agent.modules, error, {
      busyMessage: `session ${params.sessionId} is busy (a prompt or a compaction is in flight); compact it once it is idle`,
    });
  }
  return { compacted: await done };
}
