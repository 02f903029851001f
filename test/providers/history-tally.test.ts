/**
 * historyTally keeps a count per history array and reads only what was appended since (see
 * src/providers/history-tally.ts). Whatever was asked before, its answer must equal a fresh
 * count of the array as it is now.
 */
import { describe, expect, it } from "vitest";
import { historyTally } from "../../src/providers/history-tally.js";
import type { ModelMessage } from "../../src/providers/types.js";

function fresh(messages: readonly ModelMessage[]): { users: number; sinceUser: number; chars: number } {
  let users = 0;
  let sinceUser = 0;
  let chars = 0;
  for (const m of messages) {
    if (m.role === "user") {
      users++;
      sinceUser = 0;
    } else if (m.role === "assistant") sinceUser++;
    for (const block of m.content) chars += block.type === "tool-call" ? JSON.stringify(block.arguments).length : block.text.length;
  }
  return { users, sinceUser, chars };
}

function tallied(messages: readonly ModelMessage[]) {
  const { users, sinceUser, chars } = historyTally(messages);
  return { users, sinceUser, chars };
}

const user = (text: string): ModelMessage => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string): ModelMessage => ({
  role: "assistant",
  content: [{ type: "reasoning", text: "hm" }, { type: "text", text }, { type: "tool-call", id: "c", name: "read_file", arguments: { path: text } }],
});
const tool = (text: string): ModelMessage => ({ role: "tool", callId: "c", name: "read_file", content: [{ type: "text", text }], isError: false });

describe("historyTally", () => {
  it("counts an empty history as nothing", () => {
    expect(tallied([])).toEqual({ users: 0, sinceUser: 0, chars: 0 });
  });

  it("equals a fresh count after every append to a growing history", () => {
    const history: ModelMessage[] = [];
    const next = [user("hello"), assistant("a.txt"), tool("alpha"), assistant("done"), user("again"), assistant("ok"), tool("x")];
    for (const m of next) {
      history.push(m);
      expect(tallied(history)).toEqual(fresh(history));
    }
    expect(tallied(history)).toMatchObject({ users: 2, sinceUser: 1 });
  });

  it("counts assistant messages before any user message", () => {
    expect(tallied([assistant("a"), assistant("b")])).toEqual(fresh([assistant("a"), assistant("b")]));
    expect(tallied([assistant("a"), assistant("b")]).sinceUser).toBe(2);
  });

  it("counts anew when the history shrank", () => {
    const history = [user("one"), assistant("two"), user("three"), assistant("four")];
    tallied(history);
    history.length = 2;
    expect(tallied(history)).toEqual(fresh(history));
    history.length = 0;
    expect(tallied(history)).toEqual(fresh(history));
  });

  it("counts anew when the last counted message was replaced, even at the same length", () => {
    const history = [user("one"), assistant("two")];
    tallied(history);
    history[1] = user("a much longer replacement");
    expect(tallied(history)).toEqual(fresh(history));
    history.splice(1, 1, assistant("x"), assistant("y"));
    expect(tallied(history)).toEqual(fresh(history));
  });

  it("keeps separate counts for separate arrays with the same messages", () => {
    const shared = [user("one"), assistant("two"), tool("three")];
    const a = [...shared];
    const b = [...shared];
    tallied(a);
    a.push(user("four"));
    expect(tallied(b)).toEqual(fresh(b));
    expect(tallied(a)).toEqual(fresh(a));
    b.push(assistant("five"), assistant("six"));
    expect(tallied(a)).toEqual(fresh(a));
    expect(tallied(b)).toEqual(fresh(b));
  });
});
