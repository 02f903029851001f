/**
 * The bridge's waits on the client: a client tool call waiting for `session/tool_result`, a
 * tool call waiting for `session/permission`. The bridge never sends a request (PROTOCOL.md
 * "Directions"): it records a durable event and parks a waiter here, keyed by session and id;
 * the client's request settles it.
 *
 * Invariant: every waiter ends exactly once, and nothing it holds (timer, abort listener)
 * outlives it — by the client's answer, its turn's abort signal (cancel, shutdown, a closed
 * stdout, a vanished client), its deadline, or `close` (end of input: no answer can come any
 * more). After `close`, a new wait ends at once with the closed outcome.
 *
 * @module
 */

/** `initialize.clientToolTimeoutMs`'s default: ten minutes, a person's time to look at a request. */
export const DEFAULT_CLIENT_TOOL_TIMEOUT_MS = 600_000;

/** What a wait is for: a client tool's result (`session/tool_result`), an approval's decision (`session/permission`) or a hook's answer (`session/hook`). */
export type WaitKind = "tool-result" | "permission" | "hook";

/** How a wait ended. */
export type WaitOutcome<T> =
  | { kind: "answered"; value: T }
  | { kind: "timed-out"; afterMs: number }
  | { kind: "aborted" }
  | { kind: "closed"; why: string };

interface Waiter {
  settle(outcome: WaitOutcome<unknown>): void;
}

export class ClientWaits {
  private readonly waiters = new Map<string, Waiter>();
  private closedWhy: string | undefined;

  constructor(private readonly timeoutMs: number) {}

  private static key(kind: WaitKind, sessionId: string, id: string): string {
    return `${kind}\u0000${sessionId}\u0000${id}`;
  }

  /**
   * Parks a waiter of `kind` for `id` in `sessionId`. Synchronous up to the registration, so the caller
   * may announce the request right after calling this and an immediate answer still finds it.
   * A second wait for the same key ends the first as aborted (never expected: the loop makes
   * the call ids of a step unique, and request ids are random).
   */
  wait<T>(kind: WaitKind, sessionId: string, id: string, signal: AbortSignal): Promise<WaitOutcome<T>> {
    if (this.closedWhy !== undefined) return Promise.resolve({ kind: "closed", why: this.closedWhy });
    if (signal.aborted) return Promise.resolve({ kind: "aborted" });
    const key = ClientWaits.key(kind, sessionId, id);
    this.waiters.get(key)?.settle({ kind: "aborted" });
    return new Promise<WaitOutcome<T>>((resolve) => {
      const onAbort = () => waiter.settle({ kind: "aborted" });
      const timer = setTimeout(() => waiter.settle({ kind: "timed-out", afterMs: this.timeoutMs }), this.timeoutMs);
      const waiter: Waiter = {
        settle: (outcome) => {
          if (this.waiters.get(key) !== waiter) return;
          this.waiters.delete(key);
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          resolve(outcome as WaitOutcome<T>);
        },
      };
      this.waiters.set(key, waiter);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Hands the client's answer to its waiter of `kind`; `false` when none waits for it (unknown, of the other kind, answered, timed out or released). */
  answer(kind: WaitKind, sessionId: string, id: string, value: unknown): boolean {
    const waiter = this.waiters.get(ClientWaits.key(kind, sessionId, id));
    if (!waiter) return false;
    waiter.settle({ kind: "answered", value });
    return true;
  }

  /** Whether anything waits on the client. */
  get size(): number {
    return this.waiters.size;
  }

  /** No answer can come any more (end of input): ends every wait, and every later one, as closed. */
  close(why: string): void {
    this.closedWhy ??= why;
    for (const waiter of [...this.waiters.values()]) waiter.settle({ kind: "closed", why });
  }
}
