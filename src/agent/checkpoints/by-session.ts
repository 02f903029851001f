/**
 * The checkpoints of every session of one runtime, made on first use: beside the session logs
 * (the store's folder), or, without a session log, in a private temporary folder.
 */
import { privateCheckpointFolder, privateFolderMade } from "./memory-folder.js";
import { activityBeside } from "./process-activity.js";
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
      known = new SessionCheckpoints(new CheckpointStore(this.folder(), sessionId), this.workspace, this.logFolder === undefined ? undefined : activityBeside(this.logFolder));
      this.known.set(sessionId, known);
    }
    return known;
  }

  /** Where the checkpoints are kept (made on first use without a session log). */
  private folder(): string {
    try {
      return this.logFolder ?? privateCheckpointFolder();
    } catch (error) {
      throw new CheckpointsUnavailableError(error);
    }
  }

  /**
   * A session's store: its handle's, else one of the folder alone. No handle is made for a
   * session that is not loaded: one reads the workspace (its real path: a fork or a delete must
   * not fail for a workspace removed since), and one kept for a session not loaded would never
   * be forgotten (loaded-sessions.ts `dropped` sees only loaded ones), so its next turn would be
   * recorded through what it remembered of a folder another process may have changed since.
   */
  private storeOf(sessionId: string): CheckpointStore {
    return this.known.get(sessionId)?.store ?? new CheckpointStore(this.folder(), sessionId);
  }

  /**
   * What records turn `turn`'s checkpoint. Checkpoints are a safety net the user did not ask
   * for: when they cannot be kept (no private folder can be made: a missing or full TMPDIR
   * without a session log), the turn runs without one (`undefined`), and the log says why.
   */
  recorder(sessionId: string, turn: number, mode: PermissionMode, logger: Logger, parentSessionId?: string): TurnRecorder | undefined {
    try {
      return new TurnRecorder(this.of(sessionId), turn, mode, logger, { sessionId, parentSessionId });
    } catch (error) {
      logger.warn(`session ${sessionId}, turn ${turn}: the turn runs without a checkpoint: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** After a `session/fork` at `turn` (default: all): the fork gets the checkpoints of the turns it copied. */
  fork(sessionId: string, newSessionId: string, turn: number | undefined): void {
    this.storeOf(sessionId).copyTo(this.storeOf(newSessionId), turn ?? Number.MAX_SAFE_INTEGER);
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
    // The handle is usually forgotten by now (the session was unloaded first: `forget`), and no
    // private folder is made only to remove nothing from it.
    if (this.logFolder === undefined && (this.known.has(sessionId) || privateFolderMade())) this.storeOf(sessionId).remove();
    this.known.delete(sessionId);
  }
}
