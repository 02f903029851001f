/**
 * Wire types of the client-tools and approvals additions (PROTOCOL.md "Client tools",
 * "Approvals"): what the bridge records while it waits on the client, and the two requests that
 * answer. Part of the protocol's types (types.ts re-exports them); nothing redeclares them.
 *
 * @module
 */
import type { JsonObject, TextBlock } from "./json.js";


/** A tool the client offers (`initialize.clientTools`); the client runs it and answers with `session/tool_result`. */
export interface ClientToolSpec {
  /** `[A-Za-z0-9_-]{1,64}`; no built-in tool's name and not starting with `mcp__`. */
  name: string;
  description: string;
  /** A JSON Schema object (`type: "object"`). */
  parameters: JsonObject;
  /** `true`: changes nothing (runs beside other read-only calls, stays offered in `read-only` mode, needs no approval under `writes`). Default false. */
  readOnly?: boolean;
}

/** Which tool calls wait for the client's `session/permission`: none, those of tools that are not read-only, or all. */
export type ApprovalPolicy = "never" | "writes" | "always";
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ["never", "writes", "always"];

/** `tool/request` (durable): the model called a client tool; the bridge waits for `session/tool_result`. */
export interface ToolRequestEventData {
  callId: string;
  name: string;
  arguments: JsonObject;
}

/** `permission/request` (durable): a tool call waits for `session/permission`. */
export interface PermissionRequestEventData {
  requestId: string;
  callId: string;
  name: string;
  arguments: JsonObject;
}

/** `permission/decision` (durable): the answer, or the deny a timeout or a closed input made. `arguments`: the ones the call ran with, when the client changed them. */
export interface PermissionDecisionEventData {
  requestId: string;
  decision: "allow" | "deny";
  message?: string;
  arguments?: JsonObject;
}

/** Params of `session/tool_result`. */
export interface SessionToolResultParams {
  sessionId: string;
  callId: string;
  content: TextBlock[];
  isError?: boolean;
}

/** Params of `session/permission`. */
export interface SessionPermissionParams {
  sessionId: string;
  requestId: string;
  decision: "allow" | "deny";
  message?: string;
  /** With `allow`: the arguments to run the call with instead of the model's. */
  arguments?: JsonObject;
}
