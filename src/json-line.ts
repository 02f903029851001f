/**
 * JSON lines (NDJSON) of protocol frames and session log records, without extra copies of a
 * long string.
 *
 * Why: `JSON.stringify` of a value holding a long string — a whole assistant message —
 * builds its JSON as a rope, which V8 flattens into a second copy when it is written, and the
 * write encodes a third copy as UTF-8: with the text itself, four copies at once. Invariant:
 * here each long string is encoded slice by slice straight into UTF-8 Buffers, each made when
 * the writer asks for it, so a line costs one piece of about 64 KiB at a time beside the text
 * (the measurement: bench/README.md, "Why the code does this").
 * Values without a long string (every streamed chunk) take the plain `JSON.stringify` path.
 *
 * The values are plain JSON data, as protocol frames and events are: objects, arrays, strings,
 * numbers, booleans, null, and `undefined` for an absent optional field (left out, as
 * `JSON.stringify` does; `null` in an array).
 *
 * @module
 */

/** Sizes, in UTF-16 units, of the long-string path (tests make them small). */
export interface JsonLineSizes {
  /** Strings from this length up are encoded in slices. */
  longString: number;
  /** A long string is escaped this much at a time: the escaping's garbage stays in V8's young generation. */
  slice: number;
  /**
   * JSON text is gathered into Buffers of at least this much: 64 KiB or more go through the
   * coalescing writer as they are, not copied into a batch.
   */
  buffer: number;
}

export const JSON_LINE_SIZES: JsonLineSizes = { longString: 64 * 1024, slice: 8 * 1024, buffer: 64 * 1024 };

/** Nesting deeper than this is not searched for long strings (protocol values are shallow). */
const MAX_SEARCH_DEPTH = 32;

/**
 * The NDJSON line of `value`: a string (ends with "\n"), or, when it holds a long string, its
 * UTF-8 bytes as a lazy sequence of Buffers to be written in order. Each Buffer is made only when
 * it is asked for, so a writer that takes the next one only when its output has room (the
 * endpoint, under a slow client) never holds more than one piece of a long line beside the value.
 * The last Buffer, and only it, ends with the byte "\n": JSON text escapes every newline it
 * holds, and the bytes of a multi-byte UTF-8 character are never below 0x80.
 */
export function jsonLine(value: unknown, sizes = JSON_LINE_SIZES): string | Iterable<Buffer> {
  const text = jsonText(value, sizes);
  return text === undefined ? new LineEncoder(sizes).line(value) : `${text}\n`;
}

/**
 * `JSON.stringify(value)` when it holds no long string; `undefined` when it does (its line must
 * then be made by `jsonLine`, piece by piece). What lets a caller encode a value once and splice
 * the text into several lines (a session event into its log line and its notification's).
 */
export function jsonText(value: unknown, sizes = JSON_LINE_SIZES): string | undefined {
  return holdsLongString(value, sizes.longString, 0) ? undefined : JSON.stringify(value);
}

function holdsLongString(value: unknown, longString: number, depth: number): boolean {
  if (typeof value === "string") return value.length >= longString;
  if (typeof value !== "object" || value === null || depth > MAX_SEARCH_DEPTH) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsLongString(item, longString, depth + 1)) return true;
    return false;
  }
  for (const key in value) if (holdsLongString((value as Record<string, unknown>)[key], longString, depth + 1)) return true;
  return false;
}

/** Yields JSON text as it would come out of `JSON.stringify`, long strings as Buffers of slices. */
class LineEncoder {
  /** JSON text not yet encoded: the structure around the long strings, and their short neighbours. */
  private pending = "";

  constructor(private readonly sizes: JsonLineSizes) {}

  *line(value: unknown): Generator<Buffer, void, undefined> {
    yield* this.value(value);
    this.pending += "\n";
    yield this.take();
  }

  private *value(value: unknown): Generator<Buffer, void, undefined> {
    const { longString } = this.sizes;
    if (typeof value === "string" && value.length >= longString) {
      yield* this.string(value);
    } else if (typeof value === "object" && value !== null && holdsLongString(value, longString, 0)) {
      if (Array.isArray(value)) yield* this.array(value);
      else yield* this.object(value as Record<string, unknown>);
    } else {
      this.pending += JSON.stringify(value);
    }
  }

  private *array(items: unknown[]): Generator<Buffer, void, undefined> {
    this.pending += "[";
    for (let index = 0; index < items.length; index++) {
      const item = items[index];
      if (index > 0) this.pending += ",";
      if (omitted(item)) this.pending += "null";
      else yield* this.value(item);
    }
    this.pending += "]";
  }

  private *object(record: Record<string, unknown>): Generator<Buffer, void, undefined> {
    this.pending += "{";
    let first = true;
    for (const key of Object.keys(record)) {
      const item = record[key];
      if (omitted(item)) continue;
      this.pending += `${first ? "" : ","}${JSON.stringify(key)}:`;
      first = false;
      yield* this.value(item);
    }
    this.pending += "}";
  }

  private *string(text: string): Generator<Buffer, void, undefined> {
    this.pending += '"';
    for (let start = 0; start < text.length; ) {
      let end = Math.min(start + this.sizes.slice, text.length);
      // Never between the halves of a surrogate pair: each half alone would be escaped as \udxxx.
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end += end - 1 > start ? -1 : 1;
      const quoted = JSON.stringify(text.slice(start, end));
      this.pending += quoted.slice(1, -1);
      if (this.pending.length >= this.sizes.buffer) yield this.take();
      start = end;
    }
    this.pending += '"';
  }

  private take(): Buffer {
    const buffer = Buffer.from(this.pending);
    this.pending = "";
    return buffer;
  }
}

/** Values `JSON.stringify` leaves out of an object (and writes as null in an array). */
function omitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
