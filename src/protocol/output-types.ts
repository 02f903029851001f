/**
 * Wire types of two Additions (PROTOCOL.md "Structured output" and "Long sessions" —
 * compaction): kept out of `types.ts`, which imports them into its unions, so each concept
 * stays in one file. Details the code chose: docs/PROTOCOL.md, "Structured output" and
 * "Compaction".
 *
 * @module
 */
import type { JsonValue } from "./json.js";

/** The name of the tool a structured turn's model answers with; its parameters are `outputSchema` (wrapped, see below). */
export const FINAL_ANSWER_TOOL = "final_answer";

/** How many answers (invalid values, plain-text replies) a structured turn takes before it ends `output-invalid`. */
export const MAX_OUTPUT_ATTEMPTS = 3;

/** A structured turn ended without a valid answer: `message` is the last validation error or reminder. */
export interface OutputInvalidReason {
  kind: "output-invalid";
  message: string;
}

/**
 * `output/reminder` (durable): the model answered a structured turn in plain text; this text
 * went back to it as a user-role message, telling it to call `final_answer`. It is part of the
 * history (resume replays it) but is not a user message: it starts no turn.
 */
export interface OutputReminderEventData {
  turn: number;
  /** 1-based: which of the `MAX_OUTPUT_ATTEMPTS` answers this was. */
  attempt: number;
  text: string;
}

/** The `output` of a structured turn's `turn/end`: the value that passed `outputSchema`. */
export type TurnOutput = JsonValue;

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
