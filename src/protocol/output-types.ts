/**
 * Wire types of structured output (PROTOCOL.md "Structured output"): kept out of `types.ts`,
 * which imports them into its unions, so the concept stays in one file. Details the code
 * chose: docs/PROTOCOL.md, "Structured output".
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
