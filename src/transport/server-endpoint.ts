/**
 * The server half of directional JSON-RPC 2.0 over NDJSON: it takes requests and writes
 * responses and notifications, nothing else. There is no outbound request, no request-id
 * generator, no pending-response map and no inbound notification dispatch; response- and
 * notification-shaped input frames are ignored (with a debug line on stderr).
 *
 * Ordering: frames go to the output in the order they are produced. A request's response is
 * produced when its handler settles, so every notification the handler emitted before that
 * (awaited or not) is already ahead of it on the stream.
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { JsonObject, NotificationMap, NotificationMethod, RequestId, ResponseFrame } from "../protocol/types.js";
import { LineReader } from "./line-reader.js";
import { parseInputLine } from "./input-frame.js";
import { FrameWriter, type FrameOutput } from "./frame-writer.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";

/** Default longest accepted input line: 16 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Default output waiting for the client above which input is no longer read: 1 MiB. */
export const DEFAULT_MAX_QUEUED_OUTPUT_BYTES = 1024 * 1024;

/** What a handler learns about the request it serves. */
export interface RequestContext {
  id: RequestId;
  method: string;
}

/**
 * Serves one request. The resolved value is the `result`; a thrown `RpcError` is answered
 * with its code, anything else with -32603 and the error's message.
 */
export type RequestHandler = (method: string, params: JsonObject | undefined, context: RequestContext) => unknown;

/** What the endpoint needs of its input: a node Readable's surface (stdin, or stdio.ts's relay in front of it). */
export interface EndpointInput {
  on(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  on(event: "end" | "error", listener: () => void): unknown;
  off(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  off(event: "end" | "error", listener: () => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

export interface ServerEndpointOptions {
  /** Where requests come from (stdin). */
  input: EndpointInput;
  /** Where frames go (stdout). Nothing else may write to it. */
  output: FrameOutput;
  /** Cleans the bridge's secrets out of error responses (redact.ts). */
  redactor?: Redactor;
  /** Longest accepted input line in bytes. Default 16 MiB (`DEFAULT_MAX_LINE_BYTES`). */
  maxLineBytes?: number;
  /**
   * Flow control of the input: while more than this many bytes of output wait for the client
   * (`output.writableLength`), no more input is read; reading resumes on `drain`. Replies to
   * requests are not held back the way notifications are, so without this a client that floods
   * requests (or garbage) and does not read would make the queue grow without bound. Producers
   * awaiting `notify()` keep the queue near the stream's high-water mark, far below this, so
   * they never stop the input. Default 1 MiB (`DEFAULT_MAX_QUEUED_OUTPUT_BYTES`).
   */
  maxQueuedOutputBytes?: number;
  /** Called once when the input has ended (EOF) and every line of it has been dispatched. */
  onInputEnd?: () => void;
  /** Called once when the output can no longer be written (EPIPE: the client stopped listening). */
  onOutputClosed?: (error: Error) => void;
  /** Where debug lines about ignored frames go. Default: nowhere. */
  logger?: Logger;
}

export class ServerEndpoint {
  private handler: RequestHandler | undefined;
  private readonly reader: LineReader;
  private readonly writer: FrameWriter;
  private started = false;
  private closed = false;
  /** Input is paused because too much output waits for the client (see `maxQueuedOutputBytes`). */
  private throttled = false;
  /** `notifyJson`'s line before the encoded value, for the last method and params head it wrote (a streamed turn's frames share it). */
  private lastMethod: string | undefined;
  private lastParamsHead = "";
  private lastHead = "";
  private readonly onData = (chunk: Buffer | string) => this.reader.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  private inputEnded = false;
  private readonly onEnd = () => {
    if (this.inputEnded) return;
    this.inputEnded = true;
    // onInputEnd follows once every line was dispatched (later, when input is throttled).
    this.reader.end();
  };

  constructor(private readonly options: ServerEndpointOptions) {
    this.reader = new LineReader({
      maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
      onLine: (line) => this.handleLine(line),
      onOverflow: () =>
        this.writeError(null, ErrorCode.InvalidRequest, `line longer than ${options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES} bytes discarded`, "line-too-long"),
      onEnd: () => this.options.onInputEnd?.(),
    });
    this.writer = new FrameWriter({
      output: options.output,
      maxQueuedOutputBytes: options.maxQueuedOutputBytes ?? DEFAULT_MAX_QUEUED_OUTPUT_BYTES,
      onOverfull: () => this.throttleInput(),
      onBroken: (error) => this.options.onOutputClosed?.(error),
    });
  }

  /** Sets the one request handler. Requests that arrive before it is set get -32603. */
  onRequest(handler: RequestHandler): void {
    this.handler = handler;
  }

  /** Starts reading input. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.options.input.on("data", this.onData);
    this.options.input.on("end", this.onEnd);
    this.options.input.on("error", this.onEnd);
  }

  /**
   * Writes a notification. The promise resolves once the output has room again, so a producer
   * that awaits it is slowed to the client's reading pace and memory stays bounded.
   *
   * `params` must not change afterwards: a frame holding a long string is encoded piece by
   * piece as the output drains, after this returns (session events are never changed once
   * emitted).
   */
  notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]): Promise<void> {
    return this.writer.whenRoom(this.write({ jsonrpc: "2.0", method, params }));
  }

  /**
   * `notify` of params already encoded, as an object whose last field's value is `lastJson`:
   * `${paramsHead}${lastJson}}` is `JSON.stringify(params)` (`paramsHead` is `{` and the fields
   * before, up to that field's `"name":`), so the line is the same bytes `notify` writes. The
   * line's text before `lastJson` is made once for a run of frames with the same method and
   * head (a turn's events), and its end is one constant. `undefined` when the output has room
   * now, else a promise that resolves when it has (`notify`'s promise, without one made when
   * nothing waits).
   */
  notifyJson(method: NotificationMethod, paramsHead: string, lastJson: string): Promise<void> | undefined {
    if (method !== this.lastMethod || paramsHead !== this.lastParamsHead) {
      this.lastMethod = method;
      this.lastParamsHead = paramsHead;
      // A method name is a constant of the protocol (`session.event`): nothing in it to escape.
      this.lastHead = `{"jsonrpc":"2.0","method":"${method}","params":${paramsHead}`;
    }
    return this.writer.roomPromise(this.writer.writeLine(`${this.lastHead}${lastJson}}}\n`));
  }

  /**
   * Stops holding producers back: pending and future `notify()` promises resolve at once. For
   * shutdown and signals, so that turns being aborted reach their end (and the process its
   * drain deadline) even when the client has stopped reading.
   */
  releaseProducers(): void {
    this.writer.release();
  }

  /** Resolves when every frame written so far has been handed to the OS (or the output broke). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Stops reading input. Frames still being produced are written; nothing new is dispatched. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.options.input.off("data", this.onData);
    this.options.input.off("end", this.onEnd);
    this.options.input.off("error", this.onEnd);
    this.options.input.pause();
  }

  private handleLine(line: string): void {
    if (this.closed) return;
    const frame = parseInputLine(line);
    if (frame === undefined) return;
    if (frame.type === "ignored") this.options.logger?.debug(frame.why);
    else if (frame.type === "invalid") this.writeError(frame.id, frame.code, frame.message, frame.kind);
    else this.dispatch(frame.id, frame.method, frame.params);
  }

  private dispatch(id: RequestId, method: string, params: JsonObject | undefined): void {
    const handler = this.handler;
    if (!handler) {
      this.writeError(id, ErrorCode.InternalError, "no request handler is installed", "internal-error");
      return;
    }
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(handler(method, params, { id, method }));
    } catch (error) {
      result = Promise.reject(error);
    }
    result.then(
      (value) => {
        // Every request is answered once. A result that cannot be encoded (JSON.stringify
        // throws on a value nested thousands deep, as a damaged log can hold for session/read)
        // must not leave the request unanswered and the error unhandled: it is an internal
        // error. A frame without a long string is encoded whole before anything is written, so
        // nothing of it went out (what a log holds is bounded before it gets here: log-lines.ts).
        try {
          this.write({ jsonrpc: "2.0", id, result: value === undefined ? {} : value });
        } catch (error) {
          this.writeError(id, ErrorCode.InternalError, `internal error: the result could not be encoded: ${(error as Error).message}`, "internal-error");
        }
      },
      (error: unknown) => {
        if (error instanceof RpcError) {
          const body = error.toJSON();
          this.options.redactor?.inPlace(body);
          this.write({ jsonrpc: "2.0", id, error: body });
        } else {
          const message = error instanceof Error ? error.message : String(error);
          this.writeError(id, ErrorCode.InternalError, `internal error: ${message}`, "internal-error");
        }
      },
    );
  }

  private writeError(id: RequestId | null, code: number, message: string, kind: string): void {
    const clean = this.options.redactor?.text(message) ?? message;
    this.write({ jsonrpc: "2.0", id, error: { code, message: clean, data: { kind } } } as ResponseFrame);
  }

  /** Writes a frame (frame-writer.ts); whether the output is below its high-water mark. */
  private write(frame: object): boolean {
    return this.writer.write(frame);
  }

  /**
   * Stops reading input — at once, even in the middle of a chunk — until the output has drained
   * (or broke, or closed). Lines already read wait in the line reader, unparsed.
   */
  private throttleInput(): void {
    if (this.throttled || !this.started || this.closed) return;
    this.throttled = true;
    const { input, output } = this.options;
    this.reader.pause();
    input.pause();
    const resume = () => {
      output.off("drain", resume);
      output.off("close", resume);
      this.throttled = false;
      if (this.closed) return;
      // The lines held back first; they may throttle again.
      this.reader.resume();
      if (!this.throttled && !this.closed && !this.inputEnded) input.resume();
    };
    output.on("drain", resume);
    output.on("close", resume);
  }
}
