/** The failures the agent runtime throws to its caller (server/rpc-errors.ts maps them to JSON-RPC errors). */

/** Thrown by `prompt` (and `compact`, `rewind`, `deleteSession`) when the session already has a turn in flight. */
export class SessionBusyError extends Error {
  constructor(
    readonly sessionId: string,
    why = "already has a prompt in flight; wait for its response or cancel it",
  ) {
    super(`session ${sessionId} ${why}`);
    this.name = "SessionBusyError";
  }
}

/** Thrown by `rewind` for a session this workspace does not have. */
export class UnknownSessionError extends Error {
  constructor(readonly sessionId: string) {
    super(`no session '${sessionId}' in this workspace`);
    this.name = "UnknownSessionError";
  }
}

/** Thrown when a turn reached idle without recording its `turn/end`. */
export class MissingTurnEndError extends Error {
  constructor(sessionId: string, cause: unknown) {
    super(`agent reached idle without turn/end in session ${sessionId}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "MissingTurnEndError";
  }
}
