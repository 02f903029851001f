/**
 * The checkpoints of every session of one runtime, made on first use: beside the session logs
 * (the store's folder), or, without a session log, in a private temporary folder.
 */
import { privateCheckpointFolder, privateFolderMade } from "./memory-folder.js";
import { SessionCheckpoints } from "./session-checkpoints.js";
import { CheckpointStore } from "./store.js";
import { TurnRecorder } from "./turn-recorder.js";
import type { Logger } from "../../log.js";
import type { PermissionMode } from "../../protocol/index.js";

/** No checkpoint store can be made for a session (without a session log: no private folder in TMPDIR). */
export class CheckpointsUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`no checkpoint store can be made (${(cause as Error).message}); without a session log, checkpoints are kept in a private folder under TMPDIR`);
    this.name = "CheckpointsUnavailableError";
  }
}

export class CheckpointsBySession {
  private readonly known = new Map<string, SessionCheckpoints>();

  /** `logFolder`: the store's folder of this workspace's logs; absent: no session log. */
  constructor(
    private readonly workspace: string,
    private readonly logFolder: string | undefined,
  ) {}

  of(sessionId: string): SessionCheckpoints {
    let known = this.known.get(sessionId);
    if (!known) {
      let folder: string;
      try {
        folder = this.logFolder ?? privateCheckpointFolder();
      } catch (error) {
        throw new CheckpointsUnavailableError(error);
      }
      known = new SessionCheckpoints(new CheckpointStore(folder, sessionId), this.workspace);
      this.known.set(sessionId, known);
    }
    return known;
  }

  /**
   * What records turn `turn`'s checkpoint. Checkpoints are a safety net the user did not ask
   * for: when they cannot be kept (no private folder can be made: a missing or full TMPDIR
   * without a session log), the turn runs without one (`undefined`), and the log says why.
   */
  recorder(sessionId: string, turn: number, mode: PermissionMode, logger: Logger): TurnRecorder | undefined {
    try {
      return new TurnRecorder(this.of(sessionId), turn, mode);
    } catch (error) {
      logger.warn(`session ${sessionId}, turn ${turn}: the turn runs without a checkpoint: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** After a `session/fork` at `turn` (default: all): the fork gets the checkpoints of the turns it copied. */
  fork(sessionId: string, newSessionId: string, turn: number | undefined): void {
    this.of(sessionId).store.copyTo(this.of(newSessionId).store, turn ?? Number.MAX_SAFE_INTEGER);
  }

  /** The session left memory (loaded-sessions.ts `dropped`): this handle goes; its next use makes a new one from the folder. */
  forget(sessionId: string): void {
    this.known.delete(sessionId);
  }

  /**
   * The session was deleted: its checkpoints go too. Beside a log, the store's delete removed
   * them already, under the session's lock (store/file-catalog.ts): removed again here, once the
   * lock is free, they could be another bridge's new session of the same id. Only this process's
   * handle on them goes.
   */
  remove(sessionId: string): void {
    // The handle is usually forgotten by now (the session was unloaded first: `forget`): the
    // folder is named and removed without making one, which would read the workspace (its real
    // path) and make the private folder, and could fail a delete that has happened.
    if (this.logFolder === undefined) {
      const store = this.known.get(sessionId)?.store ?? (privateFolderMade() ? new CheckpointStore(privateCheckpointFolder(), sessionId) : undefined);
      store?.remove();
    }
    this.known.delete(sessionId);
  }
}
