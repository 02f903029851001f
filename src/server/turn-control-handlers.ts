/**
 * Turn control's handlers (PROTOCOL.md "Turn control"): `session/steer`, and the check of a
 * prompt's `maxCostUsd` against what the runtime can price.
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { SessionPromptParams, SessionSteerParams, SessionSteerResult } from "../protocol/index.js";
import type { Agent } from "./initialize.js";

/** `session/steer`: answered once the steer was recorded (`true`) or refused (`false`); see AgentRuntime.steer. */
export async function steerSession(agent: Agent, params: SessionSteerParams): Promise<SessionSteerResult> {
  let steered: Promise<boolean>;
  try {
    steered = agent.runtime.steer(params.sessionId, params.contentBlocks);
  } catch (error) {
    // Too many steers already wait for the turn's next step (agent/steer.ts): -32001, retry later.
    if (error instanceof Error && error.name === "SteerQueueFullError") {
      throw new RpcError(ErrorCode.SessionBusy, error.message, { kind: "too-many-steers", sessionId: params.sessionId });
    }
    throw error;
  }
  return { steered: await steered };
}

/**
 * A budget needs prices: without them the turn's cost is unknown, and a budget that can never
 * be reached would let the turn spend without limit while the client believes it bounded.
 * So such a prompt is refused (-32602, `no-prices`) before it starts.
 */
export function checkBudget(agent: Agent, params: SessionPromptParams): void {
  if (params.maxCostUsd === undefined || agent.runtime.prices) return;
  throw new RpcError(
    ErrorCode.InvalidParams,
    "invalid params: params.maxCostUsd: the model's prices are unknown (not in the built-in table); give initialize.prices (prices= in the Python SDK) to set a budget",
    { kind: "no-prices" },
  );
}
