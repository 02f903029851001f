/**
 * `toRpcError`: the one mapping of the agent's and the store's failures to the JSON-RPC errors
 * the protocol answers them with (shared/PROTOCOL.md's error table; docs/guarantees.md). Every
 * handler that calls into the runtime or the store answers its failures through it, so a failure
 * is answered the same way whichever method met it.
 *
 * The error classes come from the agent modules the runtime was built with (agent-modules.ts):
 * importing them here would put the agent's code on the start-up path.
 *
 * @module
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import { isOutOfDescriptors } from "../tools/out-of-descriptors.js";
import type { AgentModules } from "./agent-modules.js";

export interface RpcErrorContext {
  /** The message of a `session-busy` answer, when the method says more than the runtime's own. */
  busyMessage?: string;
}

/**
 * The `RpcError` for `error`, or `error` itself when it is none of the known failures (the
 * transport answers that with `-32603`):
 *
 * - the session has a turn (or a compaction) in flight: `-32001` `session-busy`;
 * - a turn reached idle without its `turn/end`: `-32603` `missing-turn-end`;
 * - the `outputSchema` of a prompt does not compile: `-32602` `invalid-params`;
 * - no descriptor left to open a log with (EMFILE, ENFILE: a burst, a low `ulimit -n`):
 *   `-32001` `out-of-descriptors`, to be retried — never an internal error;
 * - a corrupt log: `-32603` `session-log`;
 * - a session another process has open for writing: `-32001` `session-locked`.
 */
export function toRpcError(modules: Pick<AgentModules, "runtime" | "store" | "output">, error: unknown, context: RpcErrorContext = {}): unknown {
  const { SessionBusyError, MissingTurnEndError } = modules.runtime;
  const { SessionLogError, SessionLockedError } = modules.store;
  if (error instanceof SessionBusyError) {
    return new RpcError(ErrorCode.SessionBusy, context.busyMessage ?? error.message, { kind: "session-busy", sessionId: error.sessionId });
  }
  if (error instanceof MissingTurnEndError) return new RpcError(ErrorCode.InternalError, error.message, { kind: "missing-turn-end" });
  if (error instanceof modules.output.OutputSchemaError) {
    return new RpcError(ErrorCode.InvalidParams, `invalid params: params.outputSchema: ${error.message}`, { kind: "invalid-params" });
  }
  if ((error as Error | undefined)?.name === "OutOfDescriptorsError" || isOutOfDescriptors(error)) {
    const message = (error as Error).name === "OutOfDescriptorsError" ? (error as Error).message : `the bridge is out of file descriptors (too many open files): ${(error as Error).message}; retry later, or raise the open-file limit (ulimit -n)`;
    return new RpcError(ErrorCode.SessionBusy, message, { kind: "out-of-descriptors" });
  }
  if (error instanceof SessionLogError) return new RpcError(ErrorCode.InternalError, error.message, { kind: "session-log" });
  if (error instanceof SessionLockedError) return new RpcError(ErrorCode.SessionBusy, error.message, { kind: "session-locked", sessionId: error.sessionId });
  return error;
}
