/**
 * What one input line is to the server: a request to dispatch, an invalid frame to answer with
 * an error, or a frame to ignore (response- and notification-shaped ones: the server sends no
 * requests and consumes no notifications). Pure: the endpoint (server-endpoint.ts) writes the
 * answers and dispatches the requests.
 *
 * Invariant: nothing past this check meets a value deep enough to overflow the stack when it
 * recurses (see json-depth.ts), an id that could not be echoed exactly, or params that are not
 * an object.
 */
import { MAX_JSON_DEPTH, exceedsDepth } from "../json-depth.js";
import { isObject } from "../json-value.js";
import { ErrorCode } from "../protocol/errors.js";
import type { JsonObject, RequestId } from "../protocol/types.js";

export type InputFrame =
  | { type: "request"; id: RequestId; method: string; params: JsonObject | undefined }
  /** Answered with an error response; `id` is `null` when the frame has no usable one. */
  | { type: "invalid"; id: RequestId | null; code: number; message: string; kind: string }
  /** Dropped; `why` renders the debug line, only when one is logged. */
  | { type: "ignored"; why: () => string };

/**
 * The id to answer with: a string, or a number the response can carry back exactly. A number
 * that JSON can hold but a double cannot (`1e400` parses as Infinity, `2^64` loses its last
 * digits) would come back as a different id — or as `null` — and be taken for another
 * request's response, so it counts as unusable.
 */
export function usableId(value: unknown): RequestId | null {
  if (typeof value === "string") return value;
  if (typeof value !== "number" || !Number.isFinite(value)) return null;
  return Number.isInteger(value) && !Number.isSafeInteger(value) ? null : value;
}

/**
 * A short, non-recursive rendering of an untrusted value for a log line: a scalar as JSON (at
 * most 200 characters), an object or array by its kind only.
 */
function describeScalar(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function invalid(id: RequestId | null, code: number, message: string, kind: string): InputFrame {
  return { type: "invalid", id, code, message, kind };
}

/** Classifies one input line; `undefined` for a blank one. */
export function parseInputLine(line: string): InputFrame | undefined {
  if (line.trim() === "") return undefined;
  let frame: unknown;
  try {
    frame = JSON.parse(line);
  } catch (error) {
    return invalid(null, ErrorCode.ParseError, `parse error: ${(error as Error).message}`, "parse-error");
  }
  if (!isObject(frame)) {
    const what = Array.isArray(frame) ? "a batch (array); batches are not supported" : `a ${frame === null ? "null" : typeof frame}`;
    return invalid(null, ErrorCode.InvalidRequest, `invalid request: expected one JSON object per line, got ${what}`, "not-an-object");
  }
  const hasMethod = "method" in frame;
  const hasId = "id" in frame;
  if (hasMethod && hasId) {
    if (exceedsDepth(frame, MAX_JSON_DEPTH)) {
      return invalid(usableId(frame.id), ErrorCode.InvalidRequest, `invalid request: the frame nests deeper than ${MAX_JSON_DEPTH} levels (the limit)`, "too-deep");
    }
    return requestOf(frame);
  }
  if (hasMethod) {
    return { type: "ignored", why: () => `ignored a notification-shaped frame (method ${describeScalar(frame.method)}): the server consumes no notifications` };
  }
  if ("result" in frame || "error" in frame) {
    return { type: "ignored", why: () => `ignored a response-shaped frame (id ${describeScalar(frame.id)}): the server sends no requests` };
  }
  return invalid(usableId(frame.id), ErrorCode.InvalidRequest, "invalid request: a request needs 'method' and 'id'", "invalid-request");
}

/** A frame with `method` and `id`, not too deep: the request, or why it is not one. */
function requestOf(frame: Record<string, unknown>): InputFrame {
  const id = usableId(frame.id);
  if (id === null) {
    const why =
      typeof frame.id === "number"
        ? "'id' must be a string or a number that can be echoed exactly (finite; an integer no larger than 2^53-1 in magnitude)"
        : "'id' must be a string or a number";
    return invalid(null, ErrorCode.InvalidRequest, `invalid request: ${why}`, "invalid-request");
  }
  if (frame.jsonrpc !== "2.0") return invalid(id, ErrorCode.InvalidRequest, 'invalid request: \'jsonrpc\' must be "2.0"', "invalid-request");
  if (typeof frame.method !== "string") return invalid(id, ErrorCode.InvalidRequest, "invalid request: 'method' must be a string", "invalid-request");
  const params = frame.params;
  if (Array.isArray(params)) return invalid(id, ErrorCode.InvalidParams, "invalid params: params must be an object (by-name), not an array", "invalid-params");
  if (params !== undefined && !isObject(params)) return invalid(id, ErrorCode.InvalidRequest, "invalid request: 'params' must be an object when present", "invalid-request");
  return { type: "request", id, method: frame.method, params: params as JsonObject | undefined };
}
