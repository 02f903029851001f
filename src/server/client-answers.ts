/**
 * `session/tool_result`, `session/permission` and `session/hook`: the client's answers to what a session waits
 * for (PROTOCOL.md "Client tools", "Approvals", "Turn control"). An answer nobody waits for — unknown, another
 * session's, answered before, past its deadline, aborted — is `-32602` with a `kind` the client
 * can branch on, never a silent success.
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { SessionHookParams, SessionPermissionParams, SessionToolResultParams } from "../protocol/types.js";
import type { AgentRuntime } from "../agent/runtime.js";

/** Hands a client tool's result to the call waiting for it. */
export function answerToolResult(runtime: AgentRuntime, params: SessionToolResultParams): Record<string, never> {
  const { sessionId, callId, content, isError } = params;
  if (!runtime.answerToolResult(sessionId, callId, { content, isError })) {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.callId: session ${sessionId} has no client tool call '${callId}' waiting for a result (unknown, already answered, timed out or aborted)`, {
      kind: "unknown-call",
      sessionId,
      callId,
    });
  }
  return {};
}

/** Hands the client's decision to the tool call waiting for it. */
export function answerPermission(runtime: AgentRuntime, params: SessionPermissionParams): Record<string, never> {
  const { sessionId, requestId, decision, message } = params;
  if (!runtime.answerPermission(sessionId, requestId, { decision, message, arguments: params.arguments })) {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.requestId: session ${sessionId} has no permission request '${requestId}' waiting for a decision (unknown, already answered, timed out or aborted)`, {
      kind: "unknown-request",
      sessionId,
      requestId,
    });
  }
  return {};
}

/** Hands the client's answer to the hook waiting for it; a field that hook does not take is refused and it keeps waiting. */
export function answerHook(runtime: AgentRuntime, params: SessionHookParams): Record<string, never> {
  const { sessionId, hookId, ...answer } = params;
  const outcome = runtime.answerHook(sessionId, hookId, answer);
  if (outcome.kind === "refused") {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.${outcome.field}: a ${outcome.hook} hook takes no ${outcome.field} (it still waits for its answer)`, {
      kind: "invalid-params",
      sessionId,
      hookId,
    });
  }
  if (outcome.kind === "unknown") {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.hookId: session ${sessionId} has no hook '${hookId}' waiting for an answer (unknown, already answered, timed out or aborted)`, {
      kind: "unknown-hook",
      sessionId,
      hookId,
    });
  }
  return {};
}
