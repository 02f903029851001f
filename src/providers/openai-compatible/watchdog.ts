/**
 * The timers and the abort of one HTTP attempt. The attempt's `signal` aborts when the caller's
 * signal does, or when the idle timer fires: no byte (keep-alive comments count) for
 * `idleTimeoutMs` while waiting for headers or body. `failure()` maps whatever fetch or the body
 * stream threw to an `AttemptFailure`, or to the caller's abort reason.
 *
 * @module
 */
import { ModelError } from "../types.js";
import { describeNetworkError, networkCode } from "./errors.js";
import { AttemptFailure } from "./retry.js";

/** Marker reason of the internal abort fired by the idle timer. */
class IdleTimeout extends Error {
  constructor(readonly ms: number, readonly phase: string) {
    super(`no data from the model for ${ms} ms (${phase})`);
  }
}

const UNDICI_TIMEOUTS = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

export class AttemptWatchdog {
  private readonly controller = new AbortController();
  private idle: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.controller.abort(this.caller.reason);

  constructor(
    private readonly caller: AbortSignal,
    private readonly idleTimeoutMs: number,
    private readonly endpoint: string,
  ) {
    caller.addEventListener("abort", this.onAbort, { once: true });
    if (caller.aborted) this.controller.abort(caller.reason);
  }

  /** Aborts the HTTP request and its body. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** (Re)starts the idle timer; `phase` names what was awaited in its message. */
  armIdle(phase: string): void {
    clearTimeout(this.idle);
    if (this.idleTimeoutMs > 0) {
      this.idle = setTimeout(() => this.controller.abort(new IdleTimeout(this.idleTimeoutMs, phase)), this.idleTimeoutMs);
    }
  }

  /** Maps an error thrown by fetch or by the body stream; `phase` starts the message ("the request to"). */
  failure(err: unknown, phase: string): unknown {
    if (this.caller.aborted) return this.caller.reason;
    if (err instanceof AttemptFailure) return err;
    const reason = this.controller.signal.reason;
    if (this.controller.signal.aborted && reason instanceof IdleTimeout) {
      return new AttemptFailure(new ModelError(reason.message, undefined, "timeout"), true);
    }
    const timeout = UNDICI_TIMEOUTS.has(networkCode(err) ?? "");
    return new AttemptFailure(
      new ModelError(`${phase} ${this.endpoint} failed: ${describeNetworkError(err)}`, undefined, timeout ? "timeout" : "network"),
      true,
    );
  }

  /** Stops the timers; aborts the request unless the stream was read to its end. */
  release(finished: boolean): void {
    clearTimeout(this.idle);
    this.caller.removeEventListener("abort", this.onAbort);
    if (!finished) this.controller.abort(new Error("stream released"));
  }
}
