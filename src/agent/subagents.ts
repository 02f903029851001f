/**
 * What a subagent (the `task` tool's child session) is named, announces when it ends, and hands
 * back to its parent's model: pure functions of its outcome. The turn runner (turn-runner.ts
 * `runChild`) runs the child's turn between them.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { statusOf, type AssistantContentBlock, type SubagentFinishedNotification, type TextBlock, type TurnEndReason } from "../protocol/index.js";
import type { ToolOutput } from "../tools/types.js";

/** A fresh child session id under `parentId`: the parent's id (cut to 80) and `.task-` with 8 hex digits. */
export function childSessionId(parentId: string): string {
  return `${parentId.slice(0, 80)}.task-${randomUUID().slice(0, 8)}`;
}

/** The `subagent.finished` notification of a child that ended with `reason`, its last assistant content `last`. */
export function subagentFinished(
  provider: string,
  parentSessionId: string,
  childSessionId: string,
  reason: TurnEndReason,
  last: AssistantContentBlock[] | undefined,
): SubagentFinishedNotification {
  return {
    provider,
    agentId: childSessionId,
    parentSessionId,
    childSessionId,
    status: statusOf(reason),
    stopReason: reason,
    ...(last ? { lastAssistantMessage: last } : {}),
  };
}

/**
 * The `task` call's result: the child's final text when it completed; otherwise an error
 * saying how it ended, with its last text when it had one.
 */
export function subagentOutput(reason: TurnEndReason, last: AssistantContentBlock[] | undefined, description: string | undefined): ToolOutput {
  const text = (last ?? []).filter((b): b is TextBlock => b.type === "text").map((b) => b.text).join("");
  const label = description ? `subagent '${description}'` : "the subagent";
  if (reason.kind === "completed") return { content: [{ type: "text", text: text || `(${label} finished without a final message)` }], isError: false };
  const why = reason.kind === "aborted" ? "was aborted" : `failed (${reason.kind}${"message" in reason ? `: ${reason.message}` : ""})`;
  return { content: [{ type: "text", text: `${label} ${why}${text ? `; its last message: ${text}` : ""}` }], isError: true };
}
