/**
 * TextParts holds a streamed block's text in joined pieces (see src/agent/text-parts.ts): the
 * text it gives back must be exactly the deltas in order, wherever the joins fall.
 */
import { describe, expect, it } from "vitest";
import { TextParts } from "../../src/agent/text-parts.js";

function deltas(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${i},`);
}

describe("TextParts", () => {
  it("gives back an empty block before any delta", () => {
    expect(new TextParts("text").toBlock()).toEqual({ type: "text", text: "" });
    expect(new TextParts("reasoning").toBlock()).toEqual({ type: "reasoning", text: "" });
  });

  it.each([1, 1023, 1024, 1025, 2048, 5000])("keeps %i deltas in order, across the joins", (n) => {
    const parts = new TextParts("text");
    const all = deltas(n);
    for (const d of all) parts.append(d);
    expect(parts.toBlock()).toEqual({ type: "text", text: all.join("") });
  });

  it("keeps empty deltas and halves of a surrogate pair intact", () => {
    const parts = new TextParts("reasoning");
    const emoji = "😀";
    for (let i = 0; i < 1500; i++) {
      parts.append(emoji[0]);
      parts.append("");
      parts.append(emoji[1]);
    }
    expect(parts.toBlock().text).toBe(emoji.repeat(1500));
  });

  it("gives the same text twice, and appends after toBlock() go on from it", () => {
    const parts = new TextParts("text");
    const first = deltas(1500);
    for (const d of first) parts.append(d);
    expect(parts.toBlock().text).toBe(first.join(""));
    expect(parts.toBlock().text).toBe(first.join(""));
    const more = deltas(3000);
    for (const d of more) parts.append(d);
    expect(parts.toBlock()).toEqual({ type: "text", text: first.join("") + more.join("") });
  });
});
