/**
 * Retry and backoff: a failed attempt is retried when nothing was yielded and the failure is
 * retryable; the delay is the server's `Retry-After` (capped) or exponential backoff with jitter.
 *
 * @module
 */
import { ModelError, type ModelStreamBatch } from "../types.js";
import type { ProviderLog, TransportTuning } from "./settings.js";

/**
 * Parses `Retry-After`: delay-seconds (fractions allowed) or an HTTP date. Returns milliseconds
 * (>= 0), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, base·2^retry). */
export function backoffDelay(retry: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** retry);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** A failure of one attempt, and whether another attempt may fix it (when nothing was yielded). */
export class AttemptFailure extends Error {
  constructor(
    readonly error: ModelError,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

/** Resolves after `ms`, or rejects with the abort reason as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `attempt` until it completes, retrying (after a backoff or the server's `Retry-After`,
 * capped) an `AttemptFailure` that is retryable and came before any part was yielded, at most
 * `maxRetries` times. Once a part is yielded the stream is committed: a later failure is final.
 * An abort ends the loop with the signal's reason, also during a backoff sleep.
 */
export async function* withRetries(
  attempt: () => AsyncGenerator<ModelStreamBatch>,
  settings: Pick<TransportTuning, "maxRetries" | "retryBaseMs" | "retryMaxMs" | "retryAfterMaxMs"> & { log: ProviderLog },
  signal: AbortSignal,
): AsyncGenerator<ModelStreamBatch> {
  const { maxRetries, retryBaseMs, retryMaxMs, retryAfterMaxMs, log } = settings;
  for (let retry = 0; ; retry++) {
    let yielded = false;
    try {
      for await (const batch of attempt()) {
        yielded = true;
        yield batch;
      }
      return;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (!(err instanceof AttemptFailure)) throw err;
      if (yielded || !err.retryable) throw err.error;
      if (retry >= maxRetries) {
        throw new ModelError(
          maxRetries > 0 ? `${err.error.message} (gave up after ${maxRetries} ${maxRetries === 1 ? "retry" : "retries"})` : err.error.message,
          err.error.httpStatus,
          err.error.code,
        );
      }
      const delay =
        err.retryAfterMs !== undefined ? Math.min(err.retryAfterMs, retryAfterMaxMs) : backoffDelay(retry, retryBaseMs, retryMaxMs);
      log("warn", `${err.error.message}; retry ${retry + 1} of ${maxRetries} in ${delay} ms`);
      await sleep(delay, signal);
    }
  }
}
