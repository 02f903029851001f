/**
 * JSON-RPC error codes of the protocol and the error type handlers throw to answer with one.
 *
 * @module
 */
import type { JsonValue } from "./json.js";
import type { JsonRpcErrorObject } from "./types.js";

/** Error codes, as PROTOCOL.md's table defines them. */
export const ErrorCode = {
  /** The line is not valid JSON. */
  ParseError: -32700,
  /** The frame is not a valid request (see Framing). */
  InvalidRequest: -32600,
  /** No such method. */
  MethodNotFound: -32601,
  /** Params violate the schema (the message names the field), unknown provider, bad protocolVersion. */
  InvalidParams: -32602,
  /** A handler failed, including "agent reached idle without turn/end". */
  InternalError: -32603,
  /** A `session/prompt` for a session that already has one in flight. */
  SessionBusy: -32001,
  /** `session/*` before a successful `initialize`, or a second `initialize`. */
  NotInitialized: -32002,
  /** Any request after `shutdown` was received. */
  ShuttingDown: -32003,
  /** The provider cannot work as configured (e.g. no API key). */
  ProviderUnavailable: -32004,
} as const;

/** One of the protocol's error codes. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error that a request handler throws to answer with a specific JSON-RPC error. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: { kind: string; [key: string]: JsonValue },
  ) {
    super(message);
    this.name = "RpcError";
  }

  /** The wire form of this error. */
  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}
