/**
 * Message ids (src/agent/message-id.ts): `msg_` and a random version 4 UUID, the format clients
 * saw from `msg_${crypto.randomUUID()}`, distinct across the batches its randomness is drawn in.
 */
import { describe, expect, it } from "vitest";
import { newMessageId } from "../../src/agent/message-id.js";

const UUID_V4 = /^msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newMessageId", () => {
  it("is msg_ and a version 4 UUID, never the same twice across several draws of randomness", () => {
    const ids = Array.from({ length: 1000 }, () => newMessageId());
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("has every random digit vary (each position takes many values over 1000 ids)", () => {
    const ids = Array.from({ length: 1000 }, () => newMessageId());
    for (let at = 4; at < 40; at++) {
      if ([12, 17, 22, 27].includes(at)) continue;
      const seen = new Set(ids.map((id) => id[at]));
      // The version digit is always 4; the variant digit one of 8, 9, a, b.
      expect(seen.size).toBeGreaterThanOrEqual(at === 18 ? 1 : at === 23 ? 4 : 16);
    }
  });

  it("returns a string of its own each time (a later id does not change an earlier one)", () => {
    const first = newMessageId();
    const copy = `${first}`.slice(0);
    newMessageId();
    expect(first).toBe(copy);
  });
});
