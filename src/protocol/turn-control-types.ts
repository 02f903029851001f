/**
 * Wire types of turn control (PROTOCOL.md "Turn control"): steering a running turn, prices and
 * a turn's cost budget. Kept out of `types.ts`, which imports them into its unions, so the
 * concept stays in one file. Details the code chose: docs/PROTOCOL.md, "Turn control".
 *
 * @module
 */
import type { TextBlock } from "./json.js";

/** Params of `session/steer`: the blocks join the running turn's history as a user message. */
export interface SessionSteerParams {
  sessionId: string;
  /** At least one block. */
  contentBlocks: TextBlock[];
}

/**
 * Result of `session/steer`, written once the steer was recorded (`true`: its `user/steer`
 * event is in the log and the history) or refused (`false`: no turn in flight, an unknown
 * session, or a turn that ended — cancelled, failed, out of steps or budget — before the
 * steer could join it; nothing was recorded).
 */
export interface SessionSteerResult {
  steered: boolean;
}

/**
 * `user/steer` (durable): a user message added to a running turn by `session/steer`. It joins
 * the history where it stands in the log (after the results of the step before it, before the
 * next model request); it starts no turn.
 */
export interface UserSteerEventData {
  id: string;
  content: TextBlock[];
}

/** `initialize.prices`: US dollars per million tokens, for any model (they replace the built-in table). */
export interface Prices {
  /** Input tokens not served from the prompt cache (all input, when the provider reports no split). */
  inputPerMTok: number;
  /** Input tokens served from the prompt cache; absent: priced as `inputPerMTok`. */
  cacheHitPerMTok?: number;
  outputPerMTok: number;
}

/** A turn ended because its cost reached `session/prompt.maxCostUsd`: no further model request was made. */
export interface BudgetReason {
  kind: "budget";
  /** The prompt's `maxCostUsd`. */
  limitUsd: number;
  /** The turn's cost when it ended (at least `limitUsd`). */
  costUsd: number;
}
