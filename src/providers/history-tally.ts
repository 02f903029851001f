/**
 * What a request's history tells the scripted provider: how many user messages it holds, how
 * many assistant messages came since the last one, and its characters (for the default usage).
 * Synthetic user-role messages (reminders, compaction summaries) are not user messages: they
 * start no turn, and the step count goes on across them.
 *
 * Invariant: `historyTally(messages)` equals a fresh count of `messages`, whatever was asked
 * before. A count is kept per history array and brought up to date with the messages appended
 * since the last call, because a session's history grows by appends (`Session.absorb`); an
 * array that lost or replaced its last counted message is counted anew, and so is one whose
 * owner announced an edit elsewhere with `historyEdited` (compaction cutting an old tool output
 * in place: `Session.replaceMessage`). Why the history is not walked on every request:
 * bench/README.md ("Why the code does this").
 */
import type { ModelMessage } from "./types.js";

export interface HistoryTally {
  /** User messages in the history. */
  readonly users: number;
  /** Assistant messages after the last user message (all of them when there is none). */
  readonly sinceUser: number;
  /** Characters of the text blocks, plus the JSON of each tool call's arguments. */
  readonly chars: number;
}

interface Count {
  users: number;
  sinceUser: number;
  chars: number;
  /** Messages counted so far: `messages[0 .. counted)`. */
  counted: number;
  /** The last message counted: a history that no longer has it there is counted anew. */
  last: ModelMessage | undefined;
}

const counts = new WeakMap<readonly ModelMessage[], Count>();

/** `messages` was changed in place before its end: its next tally counts it anew. */
export function historyEdited(messages: readonly ModelMessage[]): void {
  counts.delete(messages);
}

/** The tally of `messages`, reading only what was appended since the last call for this array. */
export function historyTally(messages: readonly ModelMessage[]): HistoryTally {
  let count = counts.get(messages);
  if (!count || count.counted > messages.length || (count.counted > 0 && messages[count.counted - 1] !== count.last)) {
    count = { counted: 0, last: undefined, users: 0, sinceUser: 0, chars: 0 };
    counts.set(messages, count);
  }
  for (; count.counted < messages.length; count.counted++) {
    const m = messages[count.counted];
    if (m.role === "user" && !m.synthetic) {
      count.users++;
      count.sinceUser = 0;
    } else if (m.role === "assistant") count.sinceUser++;
    for (const block of m.content) count.chars += block.type === "tool-call" ? JSON.stringify(block.arguments).length : block.text.length;
    count.last = m;
  }
  return count;
}
