/**
 * The bridge's stdin and stdout as the endpoint reads and writes them, and the first request
 * answered before Node's streams for them exist.
 *
 * Why: on a pipe, `process.stdin` and `process.stdout` are `net.Socket`s. Making them loads
 * `node:stream` and `node:net` and runs their set-up for the first time, and stdin's first chunk
 * then comes a turn of the event loop later: together about a fifth of what a start takes up to
 * its `initialize` response, all of it before the first request can be read (bench/README.md,
 * "Cold start, round 8").
 *
 * How: where stdin and stdout are both pipes (a client's `subprocess.PIPE`), the bytes already
 * waiting in stdin are read once, without waiting, through a second descriptor of the same pipe
 * opened non-blocking (`/proc/self/fd/0`: the pipe is one, so each byte is read once, by
 * whichever descriptor reads it). The endpoint takes them as its first chunk, and the frames its
 * answers make are written at once through a non-blocking descriptor of stdout's pipe. The
 * streams are made right after (`setImmediate`: once the requests of that chunk that need no I/O
 * are answered) and carry everything from then on. Where any of that is not so (stdin or stdout
 * not a pipe: a file, a terminal, a Node parent's socket pair; no /proc; nothing written yet; a
 * descriptor refused), the streams are made at once, as the bridge always did.
 *
 * Invariants:
 * - every byte of stdin reaches the endpoint once, in order: the early descriptor reads once and
 *   is closed before the stream is made;
 * - frames reach stdout in order: each early write is complete before the next frame, and one
 *   that cannot complete at once (a full pipe, any error) makes the stream and leaves the rest
 *   of its bytes to it, so the stream's handling of a closed stdout (EPIPE) is the only one;
 * - nothing here blocks: both early descriptors are non-blocking.
 *
 * @module
 */
import { EventEmitter } from "node:events";
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { FrameOutput } from "./frame-writer.js";
import type { EndpointInput } from "./server-endpoint.js";

/** The most the early read takes: a pipe's capacity on Linux by default. */
export const EARLY_READ_BYTES = 64 * 1024;

/**
 * Bytes waiting for the stream above which a write returns false. Not below the coalescer's
 * batch (64 KiB) and the stream's own mark (16 KiB): what waits then leaves the stream needing a
 * `drain` once written to it, and that `drain` is the one the producers wait for.
 */
const WAITING_MARK = 64 * 1024;

type Callback = (error?: Error | null) => void;

/** What the bridge serves on: the endpoint's input and output, and when to start them. */
export interface Stdio {
  input: EndpointInput;
  output: FrameOutput;
  /**
   * Call once the endpoint has started (its listeners are on `input`): hands it the bytes read
   * early, if any, then makes the streams (at once, or after the early chunk's answers).
   */
  begin(): void;
}

export interface StdioOptions {
  /** Node's stdin stream (made when called). Default: `process.stdin`. */
  stdin?: () => Readable;
  /** Node's stdout stream behind the coalescer (made when called). Default: `process.stdout`. */
  stdout?: () => Writable;
  /** Descriptors of stdin and stdout. Default: 0 and 1. */
  fds?: [number, number];
  /** Where a debug line says what was read and written before the streams were made. */
  debug?: (message: string) => void;
  /** Called if the streams cannot be made (node's stdio getters threw): nothing can be served. */
  failed?: (error: Error) => void;
}

/** stdin and stdout for the endpoint (see the module comment). */
export function openStdio(options: StdioOptions = {}): Stdio {
  const [inFd, outFd] = options.fds ?? [0, 1];
  const earlyOut = pipeReopened(outFd, constants.O_WRONLY);
  const earlyIn = earlyOut === undefined ? undefined : pipeReopened(inFd, constants.O_RDONLY);
  const first = earlyIn === undefined ? undefined : readWaiting(earlyIn);
  if (earlyIn !== undefined) closeQuietly(earlyIn);
  if (first === undefined && earlyOut !== undefined) closeQuietly(earlyOut);
  const input = new StdinRelay(options.stdin ?? (() => process.stdin));
  const output = new StdoutRelay(first === undefined ? undefined : earlyOut, options.stdout ?? (() => process.stdout));
  const open = () =>
    void output
      .open()
      .then(() => {
        if (first !== undefined) options.debug?.(`stdio: ${first.length} bytes read and ${output.earlyBytes} written before the streams were made`);
        input.open();
      })
      .catch((error: Error) => options.failed?.(error));
  return {
    input,
    output,
    begin() {
      if (first === undefined) return open();
      input.emit("data", first);
      setImmediate(open);
    },
  };
}

/**
 * `/proc/self/fd/<fd>` opened non-blocking with `flags` (a description of its own of the same
 * pipe, so each byte is read once, by whichever descriptor reads it), where `fd` is a pipe; else
 * undefined. Also how secrets-fd.ts reads the keys that wait in their pipe.
 */
export function pipeReopened(fd: number, flags: number): number | undefined {
  try {
    if (!fstatSync(fd).isFIFO()) return undefined;
    return openSync(`/proc/self/fd/${fd}`, flags | constants.O_NONBLOCK);
  } catch {
    return undefined; // no /proc, another owner's pipe: the streams, as always
  }
}

/** The bytes waiting in the pipe now, read through the non-blocking `fd`; undefined when there are none (EAGAIN) or it has ended. */
function readWaiting(fd: number): Buffer | undefined {
  const buffer = Buffer.allocUnsafe(EARLY_READ_BYTES);
  try {
    const n = readSync(fd, buffer, 0, buffer.length, null);
    // A copy of what was read: the line reader may keep part of it, the rest of the buffer is dropped.
    return n > 0 ? Buffer.from(buffer.subarray(0, n)) : undefined;
  } catch {
    return undefined;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing to do: it was ours and is gone
  }
}

/** The endpoint's input: nothing until `open()`, then stdin's stream (its pause and resume remembered from before). */
class StdinRelay extends EventEmitter implements EndpointInput {
  private stream: Readable | undefined;
  private paused = false;

  constructor(private readonly make: () => Readable) {
    super();
  }

  open(): void {
    if (this.stream) return;
    const stream = (this.stream = this.make());
    // Paused before a `data` listener is attached, the stream does not start flowing.
    if (this.paused) stream.pause();
    stream.on("data", (chunk: Buffer | string) => this.emit("data", chunk));
    stream.on("end", () => this.emit("end"));
    // The endpoint listens for errors until it closes; after that an error of stdin means nothing.
    stream.on("error", (error: Error) => void (this.listenerCount("error") > 0 && this.emit("error", error)));
  }

  pause(): this {
    this.paused = true;
    this.stream?.pause();
    return this;
  }

  resume(): this {
    this.paused = false;
    this.stream?.resume();
    return this;
  }
}

/**
 * The endpoint's output: until the stream is made, each write goes at once through the early
 * descriptor; then everything goes through the stream (the coalescer in front of stdout).
 */
class StdoutRelay extends EventEmitter implements FrameOutput {
  private stream: Writable | undefined;
  private opening: Promise<void> | undefined;
  /** Writes that came with neither an early descriptor nor the stream yet: written by `open()`, in order. */
  private waiting: Array<[Buffer | string, Callback | undefined]> = [];
  private waitingBytes = 0;
  /** Bytes written through the early descriptor. */
  earlyBytes = 0;

  constructor(
    private early: number | undefined,
    private readonly stdout: () => Writable,
  ) {
    super();
  }

  get writableLength(): number {
    return this.stream?.writableLength ?? this.waitingBytes;
  }

  get writableNeedDrain(): boolean {
    return this.stream?.writableNeedDrain ?? this.waitingBytes >= WAITING_MARK;
  }

  get destroyed(): boolean {
    return this.stream?.destroyed ?? false;
  }

  write(chunk: string | Buffer, callback?: Callback): boolean {
    if (this.stream) return this.stream.write(chunk, callback);
    if (this.early === undefined) return this.wait(chunk, callback);
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(this.early, bytes, written);
    } catch {
      // EAGAIN (the pipe is full), EPIPE, anything: the stream takes the rest and answers for it.
    }
    this.earlyBytes += written;
    if (written === bytes.length) {
      if (callback) process.nextTick(callback, null);
      return true;
    }
    this.giveUpEarly();
    // Its failure is begin()'s to report (`failed`); from here it may come before begin() has
    // attached its handler (a write in the first chunk's own data event), so it is handled here too.
    this.open().catch(() => undefined);
    return this.wait(bytes.subarray(written), callback);
  }

  private wait(chunk: Buffer | string, callback: Callback | undefined): boolean {
    this.waiting.push([chunk, callback]);
    this.waitingBytes += chunk.length;
    // Over the mark the producer is told to wait for `drain`, as the stream would tell it (and the
    // endpoint stops reading past its bound): what waits is written to the stream at once when it
    // is made, a write that leaves the stream over its own mark, so that a `drain` follows.
    return this.waitingBytes < WAITING_MARK;
  }

  /** Makes the stream (once); what waits for it is written to it first. */
  open(): Promise<void> {
    this.opening ??= import("./coalescing-writable.js").then(({ coalescingWritable }) => {
      this.giveUpEarly();
      const stream = coalescingWritable(this.stdout());
      stream.on("drain", () => this.emit("drain"));
      stream.on("close", () => this.emit("close"));
      // The frame writer listens for errors from the start; with no listener an error is nobody's to hear (no throw).
      stream.on("error", (error: Error) => void (this.listenerCount("error") > 0 && this.emit("error", error)));
      this.stream = stream;
      const waiting = this.waiting;
      this.waiting = [];
      this.waitingBytes = 0;
      for (const [chunk, callback] of waiting) stream.write(chunk, callback);
    });
    return this.opening;
  }

  private giveUpEarly(): void {
    if (this.early === undefined) return;
    closeQuietly(this.early);
    this.early = undefined;
  }
}
