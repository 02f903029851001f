/**
 * A Writable in front of stdout that turns a burst of frames into one write.
 *
 * Why: a streamed turn emits one small frame per model chunk, and `process.stdout.write`
 * makes one `write(2)` per call when the pipe has room: one syscall per chunk, CPU taken from
 * the machine the client's reader shares (figures: bench/README.md, "Why the code does this").
 *
 * How: frames are collected and written together when the tick ends (the producer's chain of
 * promise reactions has run dry) or when `highWaterMark` bytes are waiting, whichever comes
 * first. The end of the tick is a `process.nextTick` queued from a promise reaction: node runs a
 * tick queued by a callback's own code (the input's `data` event starting a prompt) before that
 * callback's promise reactions, but one queued by a reaction only once they have all run. A
 * one-step turn runs in one tick, so its frames and its response leave in one write:
 * each write to a pipe wakes the client's reader, and on a machine of few cores that wake-up,
 * not the bytes, is most of what a small write costs (bench/README.md).
 *
 * The contract the endpoint relies on is kept: `write()` returns false when the producer should
 * wait for `drain` (the target is over its mark), so what the bridge holds stays bounded by
 * `highWaterMark` plus the target's own buffer; a write's callback runs once its bytes were
 * handed to the target's callback (so `flush()` before exit still means "handed to the OS");
 * the target's errors (EPIPE) are this stream's errors, and a target that closes without one is
 * an EPIPE too.
 *
 * `write()` is overridden rather than implemented through `_write`, because node's Writable
 * hands on one write at a time and waits for its callback, which a pipe may deliver only on the
 * next turn of the event loop: the very delay this class exists to avoid.
 *
 * @module
 */
import { Writable } from "node:stream";

/** Default bytes collected before they are written without waiting for the tick to end: 64 KiB, a pipe's buffer on Linux. */
export const DEFAULT_COALESCE_BYTES = 64 * 1024;

type Callback = (error?: Error | null) => void;

/** What a write to this stream learns once it was destroyed, as from a destroyed node stream. */
const destroyedError = (): Error => Object.assign(new Error("write after the output was destroyed"), { code: "ERR_STREAM_DESTROYED" });

export class CoalescingWritable extends Writable {
  private batch: Array<string | Buffer> = [];
  private callbacks: Callback[] = [];
  private batchBytes = 0;
  private tickScheduled = false;

  constructor(
    private readonly target: Writable,
    private readonly limit = DEFAULT_COALESCE_BYTES,
  ) {
    super({ highWaterMark: limit });
    // The bytes waiting for the client are the batch plus the target's buffer: the endpoint's
    // input flow control reads writableLength, and Writable's own counters stay 0 since write()
    // bypasses them. (Own properties: TypeScript declares these as fields of Writable, not accessors.)
    Object.defineProperties(this, {
      writableLength: { get: () => this.target.writableLength + this.batchBytes },
      writableNeedDrain: { get: () => this.target.writableNeedDrain },
    });
    target.on("drain", () => this.emit("drain"));
    target.on("error", (error) => this.destroy(error));
    // A target that closes without an error first has no reader all the same: it is the
    // output's end (EPIPE), not a quiet close that would leave frames, their callbacks and the
    // producers waiting for room until the exit's drain deadline.
    target.on("close", () => this.destroy(Object.assign(new Error("write EPIPE: the output closed"), { code: "EPIPE" })));
  }

  override write(chunk: string | Buffer, encodingOrCallback?: BufferEncoding | Callback, maybeCallback?: Callback): boolean {
    const callback = typeof encodingOrCallback === "function" ? encodingOrCallback : maybeCallback;
    if (this.destroyed) {
      const error = destroyedError();
      if (callback) process.nextTick(callback, error);
      return false;
    }
    if (!this.tickScheduled) {
      this.tickScheduled = true;
      queueMicrotask(this.scheduleEndOfTick);
    }
    if (chunk.length >= this.limit) {
      // Joined into a batch, a big chunk would be copied whole once more; it is a write of its own.
      this.writeBatch();
      return this.target.write(chunk, callback);
    }
    this.batch.push(chunk);
    if (callback) this.callbacks.push(callback);
    this.batchBytes += chunk.length;
    if (this.batchBytes >= this.limit) return this.writeBatch();
    return !this.target.writableNeedDrain;
  }

  override _final(callback: Callback): void {
    if (this.batch.length === 0) callback();
    else {
      this.callbacks.push(callback);
      this.writeBatch();
    }
  }

  /** What was collected is given up: its callbacks learn it, as a write to a closed target's would. */
  override _destroy(error: Error | null, callback: Callback): void {
    const callbacks = this.callbacks;
    this.batch = [];
    this.callbacks = [];
    this.batchBytes = 0;
    const reason = error ?? destroyedError();
    for (const waiting of callbacks) process.nextTick(waiting, reason);
    callback(error);
  }

  /** Queued as a promise reaction, so `endOfTick` runs after every reaction of this tick (see the module doc). */
  private readonly scheduleEndOfTick = () => process.nextTick(this.endOfTick);

  private readonly endOfTick = () => {
    this.tickScheduled = false;
    this.writeBatch();
  };

  /** Writes what was collected as one chunk; returns the target's verdict. */
  private writeBatch(): boolean {
    if (this.batch.length === 0 || this.destroyed) return !this.target.writableNeedDrain;
    const parts = this.batch;
    const callbacks = this.callbacks;
    this.batch = [];
    this.batchBytes = 0;
    const data = parts.every((p) => typeof p === "string") ? parts.join("") : Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
    // A batch nobody waits on is written without a callback: node then queues no after-write
    // tick for it (unless a `drain` is due).
    if (callbacks.length === 0) return this.target.write(data);
    this.callbacks = [];
    return this.target.write(data, (error) => {
      for (const callback of callbacks) callback(error ?? null);
    });
  }
}

/** `target` behind a `CoalescingWritable` (see the module doc). */
export function coalescingWritable(target: Writable, highWaterMark = DEFAULT_COALESCE_BYTES): Writable {
  return new CoalescingWritable(target, highWaterMark);
}
