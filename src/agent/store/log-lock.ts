/**
 * A session log's hold on its lock file (lock.ts), from the turn that takes it to the moment it
 * is let go. A turn's lock is kept `LOCK_LINGER_MS` after the turn ends, on one timer a log
 * (unref'd: it keeps no process alive) re-armed at each turn's end, and let go then unless a turn
 * or a fork holds it again: a loop of turns makes and removes no lock file a turn and checks no
 * file, since nobody else can write the log while it is held. Why it matters: on ext4 without a
 * journal each `fdatasync` of the log also wrote the block of inodes the log shares with its
 * folder's and the owner file's, which the lock's name changed every turn (bench/README.md,
 * round 16). Another process waits that moment out (lock.ts `acquireLock`), and this process lets
 * a kept lock go at once before it blocks (lock.ts `letGoKept`).
 *
 * @module
 */
import { acquireLock, keepAfterTurn, LOCK_LINGER_MS, releaseLock, type HeldLock } from "./lock.js";

export class LogLock {
  /** A turn holds the lock (`take` to `endTurn`), or a fork (`holding`); the linger lets go only when none does. */
  private writing = false;
  private linger: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly sessionId: string,
    /** The lock while this process may write the log (a turn runs, or it is kept after one); `undefined` between turns. */
    private held: HeldLock | undefined,
  ) {}

  get locked(): boolean {
    return this.held !== undefined;
  }

  /** Holds the lock for a turn. `true`: taken now, not kept since this process's last turn, so the caller checks that nobody else wrote the log meanwhile. */
  take(): boolean {
    const fresh = this.held === undefined;
    this.held ??= acquireLock(this.file, this.sessionId);
    this.writing = true; // only once held: a refused take leaves no turn marked
    return fresh;
  }

  /** The turn is over: the lock is kept `LOCK_LINGER_MS`, then let go unless a turn holds it again. */
  endTurn(): void {
    this.writing = false;
    if (!this.held) return;
    keepAfterTurn(this.held, this.letGo); // let go sooner when this process is about to block (lock.ts)
    if (this.linger) this.linger.refresh();
    else this.linger = setTimeout(this.letGo, LOCK_LINGER_MS).unref();
  }

  /** Runs `use` under the lock held now (a turn's, or kept), not let go meanwhile (`use` may block: lock.ts `letGoKept`). */
  holding<T>(use: () => T): T {
    const turn = this.writing;
    this.writing = true;
    try {
      return use();
    } finally {
      this.writing = turn;
    }
  }

  /** Holds the lock for a best-effort step without waiting for another process (a log's trim at close: lock.ts `acquireLock`). */
  takeNow(): void {
    this.held ??= acquireLock(this.file, this.sessionId, false);
  }

  /** Lets the lock go now (the log is closed, or its file changed under it). */
  release(): void {
    clearTimeout(this.linger);
    this.linger = undefined; // a cleared timer is not re-armed by `refresh`
    this.writing = false;
    if (this.held) releaseLock(this.held);
    this.held = undefined;
  }

  /** Lets the kept lock go, unless a turn or a fork holds it again. */
  private readonly letGo = (): void => {
    if (!this.writing) this.release();
  };
}
