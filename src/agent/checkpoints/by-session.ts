/**
 * The checkpoints of every session of one runtime, made on first use: beside the session logs
 * (the store's folder), or, without a session log, in a private temporary folder.
 */
import { privateCheckpointFolder } from "./memory-folder.js";
import { SessionCheckpoints } from "./session-checkpoints.js";
import { CheckpointStore } from "./store.js";

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
      known = new SessionCheckpoints(new CheckpointStore(this.logFolder ?? privateCheckpointFolder(), sessionId), this.workspace);
      this.known.set(sessionId, known);
    }
    return known;
  }

  /** After a `session/fork` at `turn` (default: all): the fork gets the checkpoints of the turns it copied. */
  fork(sessionId: string, newSessionId: string, turn: number | undefined): void {
    this.of(sessionId).store.copyTo(this.of(newSessionId).store, turn ?? Number.MAX_SAFE_INTEGER);
  }

  /** The session was deleted: its checkpoints go too. */
  remove(sessionId: string): void {
    this.of(sessionId).store.remove();
    this.known.delete(sessionId);
  }
}
