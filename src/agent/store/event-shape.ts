/**
 * What a line of a session log must hold to be replayed. A log is a file: a hand edit, a
 * damaged disk or another program can leave a line that is JSON but no event (`null`, a
 * number) or an event whose data has another shape than the protocol's. Replaying such a
 * line would throw deep inside the history (a TypeError, reported as an internal error) or,
 * worse, send the model a history it never had. So every loaded line is checked here first,
 * for the fields the replay reads, and a line that fails is reported as the log's corruption.
 *
 * Only the event types that become history are checked field by field; any other type is
 * kept as it is (the replay ignores types it does not know).
 */

import { isObject } from "../../json-value.js";

type Check = (data: Record<string, unknown>) => string | undefined;

/** Why `value` is not content blocks as the history holds them (text, reasoning, tool calls); `undefined` when it is. */
export function blocksProblem(value: unknown, field: string): string | undefined {
  if (!Array.isArray(value)) return `${field} is not a list of content blocks`;
  for (const [i, block] of value.entries()) {
    if (!isObject(block) || typeof block.type !== "string") return `${field}[${i}] is not a content block`;
    if ((block.type === "text" || block.type === "reasoning") && typeof block.text !== "string") return `${field}[${i}].text is not a string`;
    if (block.type === "tool-call" && (typeof block.id !== "string" || typeof block.name !== "string")) return `${field}[${i}] is a tool call without a string id and name`;
  }
  return undefined;
}

/** The first of `fields` that is present but not a string. */
function optionalStrings(data: Record<string, unknown>, fields: string[]): string | undefined {
  const bad = fields.find((field) => data[field] !== undefined && typeof data[field] !== "string");
  return bad && `data.${bad} is not a string`;
}

const isCount = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

const CHECKS: Record<string, Check> = {
  "user/message": (d) => blocksProblem(d.content, "data.content"),
  "user/steer": (d) => blocksProblem(d.content, "data.content"),
  "assistant/message": (d) => blocksProblem(d.content, "data.content"),
  "tool/result": (d) =>
    typeof d.callId !== "string" || typeof d.name !== "string" ? "data.callId and data.name are not strings" : blocksProblem(d.content, "data.content"),
  "output/reminder": (d) => (typeof d.text === "string" ? undefined : "data.text is not a string"),
  "turn/start": (d) => (isCount(d.turn) ? undefined : "data.turn is not a turn number"),
  // Cuts the history back (agent/session.ts cutTo).
  "session/rewound": (d) => (isCount(d.turn) ? undefined : "data.turn is not a turn number"),
  // A post-tool request left without a decision becomes its call's tool/result when the next
  // turn starts (agent/hooks.ts settleLeftoverHooks): what it holds must be one.
  "hook/request": (d) =>
    typeof d.hookId !== "string" || typeof d.hook !== "string"
      ? "data.hookId and data.hook are not strings"
      : d.hook !== "post-tool"
        ? undefined
        : typeof d.callId !== "string" || typeof d.name !== "string"
          ? "data.callId and data.name are not strings"
          : typeof d.isError !== "boolean"
            ? "data.isError is not a boolean"
            : blocksProblem(d.content, "data.content"),
  "hook/decision": (d) =>
    typeof d.hookId !== "string" || typeof d.hook !== "string"
      ? "data.hookId and data.hook are not strings"
      : optionalStrings(d, ["skipped", "block", "context", "continue"]),
  "context/compacted": (d) =>
    !isCount(d.turn) || !isCount(d.keptFromSeq) ? "data.turn and data.keptFromSeq are not numbers" : typeof d.summary === "string" ? undefined : "data.summary is not a string",
};

/** Why `value` (a parsed log line after the header) cannot be replayed; `undefined` when it can. */
export function eventShapeProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "the line is JSON but not an event";
  if (typeof value.type !== "string") return "the event has no type";
  if (!isCount(value.seq)) {
    // Past 2^53−1 a number no longer holds every integer: such seqs can repeat (session.ts `emit`).
    const past = typeof value.seq === "number" && value.seq > Number.MAX_SAFE_INTEGER;
    return past ? `the event's seq is past 2^53−1 (${Number.MAX_SAFE_INTEGER}), the largest a seq can be` : "the event has no seq number";
  }
  const check = CHECKS[value.type];
  if (!check) return undefined;
  if (!isObject(value.data)) return `the ${value.type} event has no data`;
  const problem = check(value.data);
  return problem && `the ${value.type} event's ${problem}`;
}
