/**
 * Wire types of the hooks addition (PROTOCOL.md "Turn control", hooks): what the bridge records
 * at a hook point while it waits on the client, the request that answers, and the event that
 * records the answer. Part of the protocol's types (types.ts re-exports them); nothing
 * redeclares them.
 *
 * @module
 */
import type { JsonObject, TextBlock } from "./json.js";

/** The hook points a client may ask for in `initialize.hooks`. */
export type HookName = "prompt-submit" | "post-tool" | "stop";
export const HOOK_NAMES: readonly HookName[] = ["prompt-submit", "post-tool", "stop"];

/** `hook/request` of a `prompt-submit` hook: the prompt, before the turn's first model request. */
export interface PromptSubmitHookData {
  hookId: string;
  hook: "prompt-submit";
  content: TextBlock[];
}

/** `hook/request` of a `post-tool` hook: a tool call's outcome, before its `tool/result` is recorded. */
export interface PostToolHookData {
  hookId: string;
  hook: "post-tool";
  callId: string;
  name: string;
  arguments: JsonObject;
  content: TextBlock[];
  isError: boolean;
}

/** `hook/request` of a `stop` hook: the model ended the turn with this answer. */
export interface StopHookData {
  hookId: string;
  hook: "stop";
  text: string;
}

/** `hook/request` (durable): the turn waits at a hook point for `session/hook`. */
export type HookRequestEventData = PromptSubmitHookData | PostToolHookData | StopHookData;

/**
 * What a client may answer, per hook (each field optional; `{}` changes nothing):
 * `prompt-submit` takes `block` and `context`; `post-tool` takes `content`, `isError` and
 * `context`; `stop` takes `continue`. A field the hook does not take is refused (-32602).
 */
export interface HookAnswer {
  /** prompt-submit: end the turn `{ kind: "blocked", message: block }` before any model request. */
  block?: string;
  /** prompt-submit: appended to the user message; post-tool: appended to the result as a text block. */
  context?: string;
  /** post-tool: replaces the result's content. */
  content?: TextBlock[];
  /** post-tool: replaces the result's error flag. */
  isError?: boolean;
  /** stop: joins the history as a user message, and the turn goes on. */
  continue?: string;
}

/**
 * `hook/decision` (durable): how a hook request ended. An answer is recorded as given (its
 * fields beside `hookId` and `hook`); no answer (the deadline, a closed input, a bridge that
 * stopped while it waited) is recorded with `skipped`, the reason, and the turn goes on as if
 * the hook had answered `{}`. A cancelled turn records no decision.
 */
export interface HookDecisionEventData extends HookAnswer {
  hookId: string;
  hook: HookName;
  /** Present when no answer came: why the hook was skipped. */
  skipped?: string;
}

/** Params of `session/hook`: the answer to the `hook/request` `hookId` of `sessionId`. */
export interface SessionHookParams extends HookAnswer {
  sessionId: string;
  hookId: string;
}

/** Why a turn ended when a prompt-submit hook blocked it (status `error`). */
export interface BlockedReason {
  kind: "blocked";
  message: string;
}
