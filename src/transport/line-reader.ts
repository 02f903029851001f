/**
 * Splits a byte stream into lines, and does nothing else.
 *
 * Lines are cut on `\n` in the bytes and decoded only when whole, so a multibyte UTF-8
 * character split across reads decodes correctly. A line over `maxLineBytes` is reported once
 * and then skipped up to its end without being kept: memory stays at the limit whatever the
 * client sends.
 */
export interface LineReaderOptions {
  /** Longest accepted line in bytes, excluding the `\n`. */
  maxLineBytes: number;
  /** A whole line (without `\n`; a trailing `\r` is stripped). */
  onLine: (line: string) => void;
  /** A line passed `maxLineBytes`; called once per such line, as soon as it does. */
  onOverflow: () => void;
  /** After `end()`, once every line before it was emitted. */
  onEnd?: () => void;
}

const NEWLINE = 0x0a;

export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;
  private paused = false;
  /** Input that arrived, or was left unread, while paused. */
  private held: Buffer[] = [];
  private endHeld = false;

  constructor(private readonly options: LineReaderOptions) {}

  /**
   * Stops emitting lines, even in the middle of a chunk (for flow control: `onLine` may call
   * this). What is pushed meanwhile is held, unread, until `resume()`.
   */
  pause(): void {
    this.paused = true;
  }

  /** Emits what was held, then whatever is pushed next. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    while (!this.paused && this.held.length > 0) this.push(this.held.shift()!);
    if (!this.paused && this.endHeld) {
      this.endHeld = false;
      this.end();
    }
  }

  /** Feeds the next chunk of input. */
  push(chunk: Buffer): void {
    if (this.paused) {
      this.held.push(chunk);
      return;
    }
    let start = 0;
    for (;;) {
      if (this.paused) {
        // Paused by a line's handler: keep (a copy of) the rest of this chunk for later.
        if (start < chunk.length) this.held.unshift(Buffer.from(chunk.subarray(start)));
        return;
      }
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) break;
      const from = start;
      start = newline + 1;
      if (this.discarding) {
        this.discarding = false;
        continue;
      }
      if (this.pendingBytes + (newline - from) > this.options.maxLineBytes) {
        this.reset();
        this.options.onOverflow();
        continue;
      }
      // A line whole in this chunk is decoded where it lies, with no view or copy made of it.
      if (this.pending.length === 0) {
        this.emit(chunk, from, newline);
      } else {
        const line = Buffer.concat([...this.pending, chunk.subarray(from, newline)]);
        this.reset();
        this.emit(line, 0, line.length);
      }
    }
    if (start >= chunk.length || this.discarding) return;
    const rest = chunk.subarray(start);
    if (this.pendingBytes + rest.length > this.options.maxLineBytes) {
      this.reset();
      this.discarding = true;
      this.options.onOverflow();
      return;
    }
    // Copy: the caller may reuse its buffer, and a view would pin the whole chunk.
    this.pending.push(Buffer.from(rest));
    this.pendingBytes += rest.length;
  }

  /** The input ended: a last line without `\n` still counts (once resumed, when paused). */
  end(): void {
    if (this.paused) {
      this.endHeld = true;
      return;
    }
    if (this.discarding || this.pending.length === 0) {
      this.reset();
      this.discarding = false;
    } else {
      const line = Buffer.concat(this.pending);
      this.reset();
      this.emit(line, 0, line.length);
    }
    this.options.onEnd?.();
  }

  /** Emits the line `bytes[start, end)`, less a trailing `\r`. */
  private emit(bytes: Buffer, start: number, end: number): void {
    if (end > start && bytes[end - 1] === 0x0d) end--;
    this.options.onLine(bytes.toString("utf8", start, end));
  }

  private reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}
