/**
 * How many top-level turns run at once. Each running turn holds descriptors: its session's log
 * (open for the whole turn), a provider connection, a tool's pipes. A client that pipelines a
 * burst of prompts for new sessions (thousands at once) would, if all started together, run out
 * of descriptors under a common open-file limit (256 or 1024) and fail -32603 EMFILE.
 *
 * So at most `limit` turns run; a prompt beyond that is accepted (its session is busy at once,
 * a second prompt for it is -32001 as ever) and waits, first come first served, until a running
 * turn ends. A waiting prompt that is cancelled (session/cancel, shutdown) stops waiting and
 * answers `aborted` without having started: its session records nothing of it, and nothing is
 * opened for it (a shutdown with thousands waiting opens nothing). See docs/guarantees.md.
 *
 * And when descriptors run out anyway (other sessions' tools, MCP servers, subagents), opening
 * a session is not a failure of the prompt: `withDescriptors` waits for a running turn to end
 * (or a short while) and tries again, and only after `OUT_OF_DESCRIPTORS_WAIT_MS` gives up with
 * `OutOfDescriptorsError`, which the server answers as a retryable -32001 `out-of-descriptors`.
 * Waiting only helps while something could free a descriptor: another turn running (not one
 * that itself waits to open its session), a call beside the turns (`othersBusy`: a compaction,
 * a rewind), or, for `ENFILE` (the system's table, not this process's), other processes. When
 * nothing could, the limit is too low for the bridge as it is: the error comes at once.
 *
 * @module
 */
import * as fs from "node:fs";
import { isOutOfDescriptors } from "../tools/out-of-descriptors.js";

/** Descriptors set aside for the bridge itself (stdio, the MCP servers' pipes, sockets, logs being read). */
const RESERVED_DESCRIPTORS = 64;
/** What one running turn may hold at once, in the worst ordinary case (log, lock, socket, a tool's pipes). */
const DESCRIPTORS_PER_TURN = 8;
/** How long a prompt waits for descriptors to come free before it is answered out-of-descriptors. */
export const OUT_OF_DESCRIPTORS_WAIT_MS = 60_000;
/** How often a waiting open is tried again when no turn ends meanwhile (descriptors held elsewhere). */
const RETRY_MS = 100;

/** Thrown when a session could not be opened for lack of descriptors, after waiting. */
export class OutOfDescriptorsError extends Error {
  /**
   * `waited`: none came free within `OUT_OF_DESCRIPTORS_WAIT_MS`; else nothing the bridge runs
   * could free one (no other turn, no call beside them), so it did not wait.
   */
  constructor(
    readonly sessionId: string,
    readonly waited = true,
  ) {
    super(
      waited
        ? `session ${sessionId} could not be opened: the bridge is out of file descriptors (too many open files) and none came free within ${OUT_OF_DESCRIPTORS_WAIT_MS / 1000} s; retry later, or raise the open-file limit (ulimit -n)`
        : `session ${sessionId} could not be opened: the bridge is out of file descriptors (too many open files) with nothing running that could free one, so the open-file limit is too low for it; raise the open-file limit (ulimit -n; 64 or more), then retry`,
    );
    this.name = "OutOfDescriptorsError";
  }
}


/** The soft open-file limit of this process (/proc/self/limits), or `undefined` when unknown or unlimited. */
export function openFileLimit(): number | undefined {
  try {
    const line = fs.readFileSync("/proc/self/limits", "latin1").split("\n").find((l) => l.startsWith("Max open files"));
    const soft = Number(line?.slice("Max open files".length).trim().split(/\s+/)[0]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The default bound: what the open-file limit leaves after the reserve, per turn, between 4 and
 * 1024. `HARNESS_MAX_RUNNING_TURNS` (1 to 100000) overrides it.
 */
export function defaultTurnLimit(env: NodeJS.ProcessEnv = process.env, limit = openFileLimit()): number {
  const given = env.HARNESS_MAX_RUNNING_TURNS;
  if (given !== undefined && /^\d+$/.test(given) && Number(given) >= 1 && Number(given) <= 100_000) return Number(given);
  if (limit === undefined) return 1024;
  return Math.min(1024, Math.max(4, Math.floor((limit - RESERVED_DESCRIPTORS) / DESCRIPTORS_PER_TURN)));
}

interface Waiter {
  admit: () => void;
  onAbort: () => void;
}

export class TurnAdmission {
  private running = 0;
  /** Of the running turns, those waiting in `withDescriptors` (they hold no descriptor to free). */
  private opening = 0;
  private readonly queue: Waiter[] = [];
  /** Called once each time a turn ends: a waiting open retries then. */
  private readonly ended = new Set<() => void>();

  constructor(readonly limit: number) {}

  /** Takes a slot now if one is free (the common case: the turn starts synchronously). */
  tryEnter(): boolean {
    if (this.running >= this.limit || this.queue.length > 0) return false;
    this.running++;
    return true;
  }

  /**
   * Resolves `true` once a slot is taken (in order), or `false` when `signal` aborted first: then
   * no slot is held and the turn must not start.
   */
  enter(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.tryEnter()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        admit: () => {
          signal.removeEventListener("abort", waiter.onAbort);
          this.running++;
          resolve(true);
        },
        onAbort: () => {
          const at = this.queue.indexOf(waiter);
          if (at !== -1) this.queue.splice(at, 1);
          resolve(false);
        },
      };
      this.queue.push(waiter);
      signal.addEventListener("abort", waiter.onAbort, { once: true });
    });
  }

  /** A turn ended: its slot goes to the first waiter, and waiting opens try again. */
  leave(): void {
    this.running--;
    while (this.running < this.limit && this.queue.length > 0) this.queue.shift()!.admit();
    // A copy, since a wake removes itself; none when nothing waits, the case of every turn
    // that is not short of descriptors.
    if (this.ended.size > 0) for (const wake of [...this.ended]) wake();
  }

  /** How many turns run and wait now. */
  get counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.queue.length };
  }

  /**
   * Runs `open` (which opens files) for a turn holding its slot; while it fails for lack of
   * descriptors, waits for a turn to end or `RETRY_MS`, whichever comes first, and tries again,
   * for up to `OUT_OF_DESCRIPTORS_WAIT_MS` — as long as something could free one (the module
   * comment; `othersBusy`: whether a call that does not hold a slot runs), else it throws at
   * once. `undefined` when `signal` aborted meanwhile (the turn must not start). Other failures
   * are thrown as they are.
   */
  async withDescriptors<T>(sessionId: string, open: () => T, signal: AbortSignal, othersBusy: () => boolean = () => false): Promise<T | undefined> {
    const deadline = Date.now() + OUT_OF_DESCRIPTORS_WAIT_MS;
    for (;;) {
      if (signal.aborted) return undefined;
      try {
        return open();
      } catch (error) {
        if (!isOutOfDescriptors(error)) throw error;
        // Turns running besides this one and those waiting here, each of which could free some.
        const freeing = this.running - 1 - this.opening > 0 || othersBusy() || (error as NodeJS.ErrnoException).code === "ENFILE";
        if (!freeing) throw new OutOfDescriptorsError(sessionId, false);
        if (Date.now() >= deadline) throw new OutOfDescriptorsError(sessionId);
      }
      this.opening++;
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.ended.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, RETRY_MS);
        this.ended.add(wake);
      });
      this.opening--;
    }
  }
}
