/**
 * Every request method of the protocol with its params and result: the one list of the wire's
 * methods. The server's method table (server/server.ts) is typed by it, so it serves exactly
 * these, each with its result type; the SDK must type each (test/protocol/wire-shape.test.ts,
 * python/sdk/tests/test_wire_shape.py). A file of its own: it names the types of every
 * addition, and those files build on `types.ts`.
 *
 * @module
 */
import type { SessionPermissionParams, SessionToolResultParams } from "./client-tools-types.js";
import type { SessionHookParams } from "./hooks-types.js";
import type { SessionCompactParams, SessionCompactResult } from "./compaction-types.js";
import type { SessionSteerParams, SessionSteerResult } from "./turn-control-types.js";
import type { SessionRewindParams, SessionRewindResult } from "./checkpoint-types.js";
import type {
  SessionDeleteParams,
  SessionDeleteResult,
  SessionForkParams,
  SessionForkResult,
  SessionListParams,
  SessionListResult,
  SessionReadParams,
  SessionReadResult,
} from "./sessions-types.js";
import type {
  InitializeParams,
  InitializeResult,
  SessionCancelParams,
  SessionCancelResult,
  SessionPromptParams,
  SessionPromptResult,
  ShutdownResult,
} from "./types.js";

/** Method name → params and result. */
export interface RequestMap {
  initialize: { params: InitializeParams; result: InitializeResult };
  "session/prompt": { params: SessionPromptParams; result: SessionPromptResult };
  "session/cancel": { params: SessionCancelParams; result: SessionCancelResult };
  shutdown: { params: Record<string, never> | undefined; result: ShutdownResult };
  "session/tool_result": { params: SessionToolResultParams; result: Record<string, never> };
  "session/permission": { params: SessionPermissionParams; result: Record<string, never> };
  "session/compact": { params: SessionCompactParams; result: SessionCompactResult };
  "session/list": { params: SessionListParams; result: SessionListResult };
  "session/read": { params: SessionReadParams; result: SessionReadResult };
  "session/fork": { params: SessionForkParams; result: SessionForkResult };
  "session/delete": { params: SessionDeleteParams; result: SessionDeleteResult };
  "session/steer": { params: SessionSteerParams; result: SessionSteerResult };
  "session/rewind": { params: SessionRewindParams; result: SessionRewindResult };
  "session/hook": { params: SessionHookParams; result: Record<string, never> };
}

/** The request method names. */
export type RequestMethod = keyof RequestMap;
