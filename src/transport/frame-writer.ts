/**
 * The output half of the server endpoint (server-endpoint.ts): writes frames as NDJSON lines in
 * the order they are produced, holds producers back while the client does not read, and says
 * when too much output waits for it (the endpoint then stops reading input).
 *
 * A frame holding a long string (a whole assistant message) is encoded and written one piece at
 * a time as the output drains, so a large frame never sits in memory twice; frames made
 * meanwhile wait behind it, in order, in the backlog. (vscode-jsonrpc's `messageWriter.ts` keeps
 * its writer apart from its connection the same way.)
 *
 * @module
 */
import { jsonLine } from "../json-line.js";

/**
 * What the writer needs of its output: a node Writable's surface (stdout behind the coalescer,
 * or stdio.ts's relay in front of it).
 */
export interface FrameOutput {
  write(chunk: string | Buffer, callback?: (error?: Error | null) => void): boolean;
  readonly writableLength: number;
  readonly writableNeedDrain: boolean;
  readonly destroyed: boolean;
  on(event: "drain" | "close", listener: () => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
  emit(event: "drain"): boolean;
}

export interface FrameWriterOptions {
  /** Where frames go (stdout). Nothing else may write to it. */
  output: FrameOutput;
  /** Output waiting for the client above which `onOverfull` is called. */
  maxQueuedOutputBytes: number;
  /** Called on a write that leaves more than `maxQueuedOutputBytes` waiting for the client. */
  onOverfull: () => void;
  /** Called once when the output can no longer be written (EPIPE: the client stopped listening). */
  onBroken: (error: Error) => void;
}

/**
 * An entry of the backlog: a plain line, the remaining pieces of a long one, or a `flush()`
 * waiting for every frame before it.
 */
type BacklogFrame = { line: string } | { pieces: Iterator<Buffer> } | { flushed: () => void };

/** The byte that ends a line, and so the last piece of a long frame (see `jsonLine`). */
const NEWLINE = 0x0a;

export class FrameWriter {
  private outputBroken = false;
  /**
   * `flush()`es not yet called back. Frames are written without a callback, so that node
   * queues no after-write tick for a write that has no `drain` due: a flush is an empty write
   * with one, in the frames' order (a Writable calls its write callbacks in the order of the
   * writes), made once at exit.
   */
  private readonly flushes = new Set<() => void>();
  /** Frames waiting for the output to drain, behind a long frame that is written piece by piece. */
  private backlog: BacklogFrame[] = [];
  /** Bytes (UTF-16 units) of the backlog's plain frames. */
  private backlogBytes = 0;
  /** `pump` waits for the output's next `drain`. */
  private pumpScheduled = false;
  private drainWaiter: Promise<void> | undefined;
  private releaseDrainWaiter: (() => void) | undefined;
  private released = false;

  constructor(private readonly options: FrameWriterOptions) {
    options.output.on("error", (error: Error) => this.breakOutput(error));
  }

  /**
   * Resolves once the output has room again (at once if it has room now, the producers were
   * released, or the output broke): a producer that awaits it goes at the client's reading pace.
   */
  whenRoom(accepted: boolean): Promise<void> {
    return this.roomPromise(accepted) ?? Promise.resolve();
  }

  /** `whenRoom`, but `undefined` when there is room now: a producer in a loop awaits nothing then (no promise, no tick). */
  roomPromise(accepted: boolean): Promise<void> | undefined {
    return accepted || this.released ? undefined : this.waitForDrain();
  }

  /** Stops holding producers back: pending and future `whenRoom()` promises resolve at once. */
  release(): void {
    this.released = true;
    this.releaseDrainWaiter?.();
  }

  /** Resolves when every frame written so far has been handed to the OS (or the output broke). */
  flush(): Promise<void> {
    if (this.outputBroken) return Promise.resolve();
    return new Promise<void>((resolve) => {
      // Called back once, whether the output took the bytes before it or failed (EPIPE, destroyed).
      const flushed = () => {
        if (this.flushes.delete(flushed)) resolve();
      };
      this.flushes.add(flushed);
      if (this.backlog.length === 0) this.options.output.write("", flushed);
      else this.backlog.push({ flushed });
    });
  }

  /**
   * Returns whether the output is below its high-water mark. A frame holding a long string
   * (a whole assistant message) is written one piece at a time as the output drains, and frames
   * made meanwhile wait behind it, in order, in the backlog.
   */
  write(frame: object): boolean {
    if (this.outputBroken) return true;
    return this.writeLine(jsonLine(frame));
  }

  /** `write` of a frame already encoded: its NDJSON line (see `jsonLine`). */
  writeLine(line: string | Iterable<Buffer>): boolean {
    if (this.outputBroken) return true;
    const output = this.options.output;
    let accepted: boolean;
    if (typeof line === "string" && this.backlog.length === 0) {
      accepted = output.write(line);
    } else {
      this.backlog.push(typeof line === "string" ? { line } : { pieces: line[Symbol.iterator]() });
      if (typeof line === "string") this.backlogBytes += line.length;
      // While the pump waits for `drain`, the output is full: the frame just waits its turn.
      if (!this.pumpScheduled) this.pump();
      accepted = this.backlog.length === 0 && !output.writableNeedDrain;
    }
    if (!accepted && this.queuedOutputBytes() > this.options.maxQueuedOutputBytes) this.options.onOverfull();
    return accepted;
  }

  /** Output waiting for the client: the stream's buffer and the frames in the backlog. */
  private queuedOutputBytes(): number {
    return this.options.output.writableLength + this.backlogBytes;
  }

  /**
   * Writes the backlog until the output is over its high-water mark, then again on `drain`.
   * Producers held by `whenRoom()` go on once it is empty and the output has room.
   */
  private readonly pump = (): void => {
    const output = this.options.output;
    if (this.pumpScheduled) {
      this.pumpScheduled = false;
      output.off("drain", this.pump);
      output.off("close", this.pump);
    }
    if (output.destroyed) this.dropBacklog();
    while (this.backlog.length > 0 && !this.outputBroken) {
      const head = this.backlog[0];
      let room: boolean;
      if ("line" in head) {
        this.backlog.shift();
        this.backlogBytes -= head.line.length;
        room = output.write(head.line);
      } else if ("flushed" in head) {
        this.backlog.shift();
        room = output.write("", head.flushed);
      } else {
        const next = head.pieces.next();
        if (next.done) {
          // Only reached for an empty sequence; jsonLine always ends a line with a piece.
          this.backlog.shift();
          continue;
        }
        const piece = next.value;
        if (piece[piece.length - 1] === NEWLINE) this.backlog.shift();
        room = output.write(piece);
      }
      if (!room) {
        this.pumpScheduled = true;
        output.on("drain", this.pump);
        output.on("close", this.pump);
        return;
      }
    }
    if (this.backlog.length === 0 && !output.writableNeedDrain) this.releaseDrainWaiter?.();
  };

  private waitForDrain(): Promise<void> {
    if (this.outputBroken) return Promise.resolve();
    this.drainWaiter ??= new Promise<void>((resolve) => {
      const done = (event?: "drain") => {
        // Behind a backlog the output drains piece by piece; the pump releases producers once it is empty.
        if (event === "drain" && this.backlog.length > 0) return;
        this.options.output.off("drain", onDrain);
        this.options.output.off("close", done);
        this.drainWaiter = undefined;
        this.releaseDrainWaiter = undefined;
        resolve();
      };
      const onDrain = () => done("drain");
      this.releaseDrainWaiter = done;
      this.options.output.on("drain", onDrain);
      this.options.output.on("close", done);
    });
    return this.drainWaiter;
  }

  /** Gives up the backlog (the output broke or closed): its frames count as written, as they would after EPIPE. */
  private dropBacklog(): void {
    const dropped = this.backlog;
    this.backlog = [];
    this.backlogBytes = 0;
    for (const entry of dropped) if ("flushed" in entry) entry.flushed();
  }

  private breakOutput(error: Error): void {
    if (this.outputBroken) return;
    this.outputBroken = true;
    this.dropBacklog();
    for (const flushed of [...this.flushes]) flushed();
    this.options.output.emit("drain");
    this.options.onBroken(error);
  }
}
