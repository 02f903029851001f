/**
 * The server's phases and the moves between them (the diagram in server.ts). `HarnessServer`
 * changes its phase only through `moveTo`, which asks `canMove`: any other move is a bug.
 *
 * @module
 */

/** Where the server is in its life (the diagram in server.ts). */
export type ServerPhase = "starting" | "initializing" | "ready" | "shutting-down" | "exiting";

/** The moves `moveTo` allows; anything else is a bug, thrown as such. */
const MOVES: Record<ServerPhase, readonly ServerPhase[]> = {
  starting: ["initializing", "shutting-down", "exiting"],
  initializing: ["ready", "starting", "shutting-down", "exiting"],
  ready: ["shutting-down", "exiting"],
  "shutting-down": ["exiting"],
  exiting: [],
};

/** Whether the lifecycle allows the move from `from` to `to`. */
export function canMove(from: ServerPhase, to: ServerPhase): boolean {
  return MOVES[from].includes(to);
}

/** Exit codes after a signal: 128 + the signal's number, except SIGTERM's clean 0 (PROTOCOL.md). */
export const SIGNAL_EXIT_CODES = { SIGTERM: 0, SIGINT: 130, SIGHUP: 129 } as const;

/** How long the process waits for stdout to drain before it exits anyway. */
export const DRAIN_DEADLINE_MS = 5_000;
/** The same when the client is known to be gone: what is still queued has no reader. */
export const CLIENT_GONE_DRAIN_MS = 500;

export interface LifecycleOptions {
  logger: { debug(message: string | (() => string)): void; warn(message: string): void };
  /** Closes the input side and flushes stdout; `flush` resolves once what was written drained. */
  endpoint: { close(): void; flush(): Promise<void> };
  /** Ends the process; called once. */
  exit: (code: number) => void;
  /** Last work before the exit, after stdout drained (or its deadline passed): spans not yet sent. */
  beforeExit: () => Promise<void>;
}

/**
 * One server's phase and its way out. The phase changes only through `moveTo` (any other move
 * is a bug, thrown as such); `finish` is the one exit: stdout drained within a deadline, the
 * last work done, and the code a signal asked for, which wins over the 0 of an end of input
 * racing it.
 */
export class Lifecycle {
  private current: ServerPhase = "starting";
  private signalExitCode: number | undefined;

  constructor(private readonly options: LifecycleOptions) {}

  get phase(): ServerPhase {
    return this.current;
  }

  moveTo(next: ServerPhase): void {
    if (!canMove(this.current, next)) throw new Error(`server lifecycle: no move from ${this.current} to ${next}`);
    this.options.logger.debug(() => `lifecycle: ${this.current} -> ${next}`);
    this.current = next;
  }

  /**
   * Whether new requests are refused: a `shutdown` (or a signal, a closed stdout, a gone client)
   * arrived. Requests that arrived before it run, as if the client had waited for each answer,
   * and a turn they start is aborted at once.
   */
  get stopping(): boolean {
    return this.current === "shutting-down" || this.current === "exiting";
  }

  /** Enters shutting-down, unless already there or past it. */
  stop(): void {
    if (!this.stopping) this.moveTo("shutting-down");
  }

  /** A signal arrived: its code is the one the process ends with, even if an exit is under way. */
  signalled(signal: keyof typeof SIGNAL_EXIT_CODES): number {
    this.signalExitCode ??= SIGNAL_EXIT_CODES[signal];
    return SIGNAL_EXIT_CODES[signal];
  }

  async finish(code: number, drainMs = DRAIN_DEADLINE_MS): Promise<void> {
    if (this.current === "exiting") return;
    this.moveTo("exiting");
    this.options.endpoint.close();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.options.logger.warn(`stdout did not drain within ${drainMs} ms; exiting anyway`);
        resolve();
      }, drainMs);
    });
    await Promise.race([this.options.endpoint.flush(), deadline]);
    clearTimeout(timer);
    await this.options.beforeExit();
    // A signal already delivered is handled by the event loop's next poll: let it run, so its
    // exit code is not lost to an end of input that was read in the same turn.
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    this.options.exit(this.signalExitCode ?? code);
  }
}
