/**
 * What the bridge asks of the client during a turn, over the directional wire: running a
 * client tool (`tool/request` → `session/tool_result`) and approving a tool call
 * (`permission/request` → `session/permission` → `permission/decision`). Each question is a
 * durable event recorded before the bridge waits (ClientWaits), so a log cut off mid-wait
 * shows what was pending; each wait ends in an answer the history can hold:
 *
 * - a client tool's deadline or a closed input → an error result, and the turn goes on;
 * - an approval's deadline or a closed input → a recorded deny, and the turn goes on;
 * - an abort → the call's result says it was aborted (the loop records it), the turn ends aborted.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import type { ApprovalPolicy, JsonObject, TextBlock, ToolCallBlock } from "../protocol/index.js";
import type { ClientToolRunner, Tool, ToolOutput } from "../tools/types.js";
import type { ClientWaits, WaitOutcome } from "./client-waits.js";
import type { Session } from "./session.js";

/** The client's answer to a `tool/request`. */
export interface ClientToolAnswer {
  content: TextBlock[];
  isError?: boolean;
}

/** The client's answer to a `permission/request`. */
export interface PermissionAnswer {
  decision: "allow" | "deny";
  message?: string;
  arguments?: JsonObject;
}

/** Whether a call may run, and with which arguments; or the error output that stands for it. */
export type GateVerdict = { run: JsonObject } | { refused: ToolOutput };

/** Decides, per call, whether a tool runs: the loop asks before every tool call of every session, children included. */
export interface ToolGate {
  check(session: Session, call: ToolCallBlock, tool: Tool, signal: AbortSignal): Promise<GateVerdict>;
}

const errorOutput = (text: string): ToolOutput => ({ content: [{ type: "text", text }], isError: true });

/** A client tool runner bound to one session. */
export function clientToolRunner(session: Session, waits: ClientWaits): ClientToolRunner {
  return {
    async run(callId, name, args, signal) {
      // Registered before the event is announced, so an answer that comes at once finds it.
      const waiting = waits.wait<ClientToolAnswer>("tool-result", session.id, callId, signal);
      await session.emit("tool/request", { callId, name, arguments: args });
      const outcome = await waiting;
      switch (outcome.kind) {
        case "answered":
          // The wire schema checked the answer; this guard keeps any other answer from
          // recording a result without content, which the history could never replay.
          if (!Array.isArray(outcome.value?.content)) return errorOutput(`the client's answer to this ${name} call held no content`);
          return { content: outcome.value.content, isError: outcome.value.isError === true };
        case "timed-out":
          return errorOutput(`the client did not answer this ${name} call within ${outcome.afterMs} ms (clientToolTimeoutMs)`);
        case "closed":
          return errorOutput(`the client cannot answer this ${name} call: ${outcome.why}`);
        case "aborted":
          return errorOutput(`the ${name} call was aborted while the client ran it`);
      }
    },
  };
}

/** Whether `policy` makes a call of `tool` wait for approval. */
export function needsApproval(policy: ApprovalPolicy, tool: Tool): boolean {
  return policy === "always" || (policy === "writes" && !tool.readOnly);
}

/** The approval gate of `initialize.approvals`. */
export class ApprovalGate implements ToolGate {
  constructor(
    private readonly policy: ApprovalPolicy,
    private readonly waits: ClientWaits,
  ) {}

  async check(session: Session, call: ToolCallBlock, tool: Tool, signal: AbortSignal): Promise<GateVerdict> {
    if (!needsApproval(this.policy, tool)) return { run: call.arguments };
    const requestId = `perm_${randomUUID()}`;
    const waiting = this.waits.wait<PermissionAnswer>("permission", session.id, requestId, signal);
    await session.emit("permission/request", { requestId, callId: call.id, name: call.name, arguments: call.arguments });
    const outcome: WaitOutcome<PermissionAnswer> = await waiting;
    if (outcome.kind === "aborted") return { refused: errorOutput(`the ${call.name} call was aborted while it waited for approval`) };
    if (outcome.kind === "answered" && outcome.value.decision === "allow") {
      const edited = outcome.value.arguments;
      await session.emit("permission/decision", { requestId, decision: "allow", ...(edited ? { arguments: edited } : {}) });
      return { run: edited ?? call.arguments };
    }
    const message =
      outcome.kind === "answered"
        ? outcome.value.message
        : outcome.kind === "timed-out"
          ? `no decision came within ${outcome.afterMs} ms (clientToolTimeoutMs)`
          : `no decision can come: ${outcome.why}`;
    await session.emit("permission/decision", { requestId, decision: "deny", ...(message !== undefined ? { message } : {}) });
    return { refused: errorOutput(message ?? `the client denied this ${call.name} call`) };
  }
}
