/**
 * The text of one streamed block (text or reasoning), appended delta by delta.
 *
 * Invariant: the live memory of a block stays close to the size of its text, however many
 * deltas it took. `text += delta` would not: V8 keeps every `+=` as a rope node until the
 * string is read, so a long stream would hold several times its own text. Deltas are collected
 * in arrays and joined every `JOIN_EVERY` deltas; `toBlock()` makes one flat string.
 * Why it matters and how it is measured: bench/README.md ("Why the code does this").
 */
import type { TextBlock } from "../protocol/index.js";

/** Deltas collected before they are joined into one piece. */
const JOIN_EVERY = 1024;

export class TextParts {
  /** The pieces of `JOIN_EVERY` deltas joined so far; none until a block has that many. */
  private joined: string[] | undefined;
  private pending: string[] = [];

  constructor(readonly type: "text" | "reasoning") {}

  append(delta: string): void {
    this.pending.push(delta);
    if (this.pending.length >= JOIN_EVERY) {
      (this.joined ??= []).push(this.pending.join(""));
      this.pending = [];
    }
  }

  /** The block so far, as one flat string; appending may go on afterwards. */
  toBlock(): TextBlock | { type: "reasoning"; text: string } {
    // One join, so the text is one flat string: a `+` here would make a rope that V8 flattens
    // into a second copy the first time the text is sliced or written.
    // The pieces are garbage from here on, not held until the step ends beside the whole text:
    // the text is the first piece of whatever is appended next. A block of one delta already
    // is that array.
    let text = this.pending.join("");
    if (this.joined !== undefined) {
      this.joined.push(text);
      text = this.joined.join("");
      this.joined = undefined;
      this.pending = [text];
    } else if (this.pending.length !== 1) {
      this.pending = [text];
    }
    return { type: this.type, text };
  }
}
