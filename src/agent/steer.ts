/**
 * Steering a running turn (`session/steer`): what the client sends waits in the turn's inbox
 * and joins the history at the next step boundary, never in the middle of a step.
 *
 * Invariants, and why:
 * - A steer is recorded (`user/steer`) only between steps: after the results of every tool
 *   call of the step before it, before the next model request. A user message between a tool
 *   call and its result is a history no model accepts, and a model request that is streaming
 *   cannot take a new message: the steer waits for the step to end (it is not cut short, so
 *   no output is thrown away or paid twice).
 * - Steers are recorded in the order they arrived (one FIFO, filled synchronously by the
 *   request handler, so arrival order is the order of the requests on the wire).
 * - Each `offer` settles exactly once: `true` once its event is recorded, `false` when the
 *   turn ended (or was aborted) first. Nothing is recorded for a `false`.
 * - Once closed (the turn is ending) the inbox takes nothing: a steer that comes after the
 *   turn decided to end is refused at once, so none is left waiting for a turn that is over.
 *
 * @module
 */
import { newMessageId } from "./message-id.js";
import type { TextBlock } from "../protocol/index.js";
import type { Session } from "./session.js";

/**
 * How many steers may wait for one turn's next step boundary. Each holds a request open and its
 * content in memory until then, and all of them join the next model request: a client that
 * sends more is told to wait (`SteerQueueFullError`) instead of growing both without bound.
 */
export const MAX_WAITING_STEERS = 32;

/** A steer refused because `MAX_WAITING_STEERS` already wait for the turn (-32001 `too-many-steers`). */
export class SteerQueueFullError extends Error {
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} already has ${MAX_WAITING_STEERS} steers waiting for its next step; wait for their answers before sending more`);
    this.name = "SteerQueueFullError";
  }
}

interface Waiting {
  content: TextBlock[];
  settle: (steered: boolean) => void;
}

export class SteerInbox {
  private readonly waiting: Waiting[] = [];
  private closed = false;

  /** Queues a steer; resolves `true` once it is recorded, `false` if the turn ends first. Throws `SteerQueueFullError` past `MAX_WAITING_STEERS`. */
  offer(sessionId: string, content: TextBlock[]): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.waiting.length >= MAX_WAITING_STEERS) throw new SteerQueueFullError(sessionId);
    return new Promise((settle) => this.waiting.push({ content, settle }));
  }

  /** Whether a steer waits: a turn about to complete goes on to let the model answer it. */
  get pending(): boolean {
    return this.waiting.length > 0;
  }

  /**
   * Records every waiting steer as a `user/steer` event, in order; stops at an abort (the
   * rest are refused by `close`). Called by the loop only between steps.
   */
  async drain(session: Session, signal: AbortSignal): Promise<void> {
    while (this.waiting.length > 0 && !signal.aborted && !this.closed) {
      const next = this.waiting.shift() as Waiting;
      try {
        await session.emit("user/steer", { id: newMessageId(), content: next.content });
      } catch (error) {
        next.settle(false);
        throw error;
      }
      next.settle(true);
    }
  }

  /** The turn is ending: every waiting steer is refused, and so is any later one. Idempotent. */
  close(): void {
    this.closed = true;
    // Emptied in place: a turn nobody steered ends without an array made for nothing.
    while (this.waiting.length > 0) (this.waiting.shift() as Waiting).settle(false);
  }
}
