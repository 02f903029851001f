/**
 * The deadlines of a model request. Three bound every wait, so that no server can hold a turn
 * forever:
 * - idle (per attempt): no byte for `idleTimeoutMs` while waiting for headers or body. Keep-alive
 *   comments are bytes and re-arm it, so alone it bounds nothing against a server that sends
 *   only keep-alives; retried when nothing was yielded.
 * - first token (per attempt): no output (a delta, usage or finish) within `firstTokenTimeoutMs`
 *   of sending the request, whatever keep-alives came; not retried: the server is queueing.
 * - request (per model request): `requestTimeoutMs` over every attempt and backoff.
 * Each expiry is its own `ModelError` (codes `timeout`, `first-token-timeout`, `request-timeout`).
 *
 * @module
 */
import { ModelError } from "../types.js";
import { describeNetworkError, isBlockedPort, networkCode } from "./errors.js";
import { AttemptFailure } from "./retry.js";

/** Marker reason of the internal abort fired by the idle timer. */
class IdleTimeout extends Error {
  constructor(readonly ms: number, readonly phase: string) {
    super(`no data from the model for ${ms} ms (${phase})`);
  }
}

/** Marker reason of the internal abort fired by the first-token timer. */
class FirstTokenTimeout extends Error {
  constructor(readonly ms: number) {
    super(`the model sent no output within ${ms} ms of the request (keep-alive comments do not count); the server may be queueing it`);
  }
}

const UNDICI_TIMEOUTS = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/**
 * The abort, idle timer and first-token timer of one HTTP attempt. Its `signal` aborts when the
 * caller's does or a timer fires; `failure()` maps whatever fetch or the body stream threw to an
 * `AttemptFailure`, or to the caller's abort reason.
 */
export class AttemptWatchdog {
  private readonly controller = new AbortController();
  private idle: NodeJS.Timeout | undefined;
  private firstToken: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.controller.abort(this.caller.reason);

  constructor(
    private readonly caller: AbortSignal,
    private readonly idleTimeoutMs: number,
    firstTokenTimeoutMs: number,
    private readonly endpoint: string,
  ) {
    caller.addEventListener("abort", this.onAbort, { once: true });
    if (caller.aborted) this.controller.abort(caller.reason);
    if (firstTokenTimeoutMs > 0) {
      this.firstToken = setTimeout(() => this.controller.abort(new FirstTokenTimeout(firstTokenTimeoutMs)), firstTokenTimeoutMs);
    }
  }

  /** The model's first output arrived: the first-token timer stops. */
  sawOutput(): void {
    clearTimeout(this.firstToken);
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

  /** The wait for the server is over: the idle timer stops until the next `armIdle`. */
  disarmIdle(): void {
    clearTimeout(this.idle);
  }

  /** Maps an error thrown by fetch or by the body stream; `phase` starts the message ("the request to"). */
  failure(err: unknown, phase: string): unknown {
    if (this.caller.aborted) return this.caller.reason;
    if (err instanceof AttemptFailure) return err;
    const reason = this.controller.signal.reason;
    if (this.controller.signal.aborted && reason instanceof IdleTimeout) {
      return new AttemptFailure(new ModelError(reason.message, undefined, "timeout"), true);
    }
    if (this.controller.signal.aborted && reason instanceof FirstTokenTimeout) {
      return new AttemptFailure(new ModelError(reason.message, undefined, "first-token-timeout"), false);
    }
    const timeout = UNDICI_TIMEOUTS.has(networkCode(err) ?? "");
    return new AttemptFailure(
      new ModelError(`${phase} ${this.endpoint} failed: ${describeNetworkError(err)}`, undefined, timeout ? "timeout" : "network"),
      !isBlockedPort(err),
    );
  }

  /** Stops the timers; aborts the request unless the stream was read to its end. */
  release(finished: boolean): void {
    clearTimeout(this.idle);
    clearTimeout(this.firstToken);
    this.caller.removeEventListener("abort", this.onAbort);
    if (!finished) this.controller.abort(new Error("stream released"));
  }
}

/** Marker reason of the abort fired by the request deadline. */
class RequestTimeout extends Error {
  constructor(readonly ms: number) {
    super(`the model request did not complete within ${ms} ms (retries included)`);
  }
}

/**
 * The deadline of one model request: its `signal` aborts when the caller's does or when
 * `requestTimeoutMs` (0: none) has passed. `error(err)` turns what the request threw after the
 * deadline fired into its `ModelError`; anything else passes through.
 */
export class RequestDeadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.controller.abort(this.caller.reason);

  constructor(
    private readonly caller: AbortSignal,
    requestTimeoutMs: number,
  ) {
    caller.addEventListener("abort", this.onAbort, { once: true });
    if (caller.aborted) this.controller.abort(caller.reason);
    if (requestTimeoutMs > 0) {
      this.timer = setTimeout(() => this.controller.abort(new RequestTimeout(requestTimeoutMs)), requestTimeoutMs);
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  error(err: unknown): unknown {
    const reason = this.controller.signal.reason;
    if (this.caller.aborted || !(reason instanceof RequestTimeout)) return err;
    return new ModelError(reason.message, undefined, "request-timeout");
  }

  release(): void {
    clearTimeout(this.timer);
    this.caller.removeEventListener("abort", this.onAbort);
  }
}
