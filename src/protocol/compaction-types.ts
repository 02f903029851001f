/**
 * Wire types of compaction (PROTOCOL.md "Long sessions"): kept out of `types.ts`, which
 * imports them into its unions, so the concept stays in one file. Details the code chose:
 * docs/PROTOCOL.md, "Compaction".
 *
 * @module
 */

/**
 * `context/compacted` (durable): the history before this event was replaced by `summary`, one
 * user-role message the next requests start from. A resumed session replays the log from its
 * last `context/compacted` on; what came before is not read into memory.
 */
export interface ContextCompactedEventData {
  summary: string;
  /** The estimated prompt size before and after, in tokens. */
  tokensBefore: number;
  tokensAfter: number;
  /** The history from the event with this `seq` on was kept as it is (after the summary); what came before it is the summary. */
  keptFromSeq: number;
  /** The session's last turn when it was compacted (its turn numbering goes on from it on resume). */
  turn: number;
  /** `auto`: before a request that would pass `compactAt`; `refused`: after the model refused a request as too long; `request`: `session/compact`. */
  trigger: "auto" | "refused" | "request";
}

/** Params of `session/compact`. */
export interface SessionCompactParams {
  sessionId: string;
}

/** Result of `session/compact`: `false` when there was nothing to compact (an empty or already short history). */
export interface SessionCompactResult {
  compacted: boolean;
}
