/**
 * `session/rewind` (shared/PROTOCOL.md, "Checkpoints and rewind"; docs/PROTOCOL.md,
 * "Checkpoints"): the runtime's answer, or a specific error — busy `-32001`, an unknown session,
 * turn, a turn folded into a compaction, or a platform without descriptor paths `-32602` with
 * its `data.kind`; the store's failures through `toRpcError`. The agent's error classes are
 * told apart by name: importing them would put the agent's code on the start-up path.
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { SessionRewindParams, SessionRewindResult } from "../protocol/checkpoint-types.js";
import type { Agent } from "./initialize.js";
import { toRpcError } from "./rpc-errors.js";

export async function rewindSession(agent: Agent, params: SessionRewindParams): Promise<SessionRewindResult> {
  const busyMessage = `session ${params.sessionId} is busy (a prompt, a compaction or a rewind is in flight); rewind it once it is idle`;
  try {
    return await agent.runtime.rewind(params.sessionId, params);
  } catch (error) {
    const name = (error as Error | undefined)?.name;
    if (name === "UnknownSessionError") {
      throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.sessionId: no session '${params.sessionId}' in this workspace`, {
        kind: "unknown-session",
        sessionId: params.sessionId,
      });
    }
    if (name === "RewindRefusal") {
      const refusal = error as Error & { kind: string; turns?: number };
      throw new RpcError(ErrorCode.InvalidParams, refusal.message, {
        kind: refusal.kind,
        sessionId: params.sessionId,
        ...(refusal.turns !== undefined ? { turns: refusal.turns } : {}),
      });
    }
    if (name === "CheckpointsUnavailableError") throw new RpcError(ErrorCode.InternalError, (error as Error).message, { kind: "checkpoints-unavailable", sessionId: params.sessionId });
    throw toRpcError(agent.modules, error, { busyMessage });
  }
}
