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
}

const NEWLINE = 0x0a;

export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private discarding = false;

  constructor(private readonly options: LineReaderOptions) {}

  /** Feeds the next chunk of input. */
  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) break;
      const piece = chunk.subarray(start, newline);
      start = newline + 1;
      if (this.discarding) {
        this.discarding = false;
        continue;
      }
      if (this.pendingBytes + piece.length > this.options.maxLineBytes) {
        this.reset();
        this.options.onOverflow();
        continue;
      }
      const line = this.pending.length === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.reset();
      this.emit(line);
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

  /** The input ended: a last line without `\n` still counts. */
  end(): void {
    if (this.discarding || this.pending.length === 0) {
      this.reset();
      this.discarding = false;
      return;
    }
    const line = Buffer.concat(this.pending);
    this.reset();
    this.emit(line);
  }

  private emit(bytes: Buffer): void {
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 0x0d) end--;
    this.options.onLine(bytes.toString("utf8", 0, end));
  }

  private reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}
