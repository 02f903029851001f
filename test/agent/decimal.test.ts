/**
 * An event's `seq` as text (src/agent/decimal.ts): the same digits `String(n)` and
 * `JSON.stringify` write, which the wire and the session log carry.
 */
import { describe, expect, it } from "vitest";
import { decimalText } from "../../src/agent/decimal.js";

describe("decimalText", () => {
  it("writes every integer from 0 to 200 000 as String does", () => {
    for (let n = 0; n <= 200_000; n++) if (decimalText(n) !== String(n)) expect(decimalText(n)).toBe(String(n));
  });

  it("writes the integers around each power of ten, and up to the largest safe one, as String does", () => {
    const values = [Number.MAX_SAFE_INTEGER, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 50 + 99];
    for (let power = 1; power <= 1e15; power *= 10) values.push(power - 1, power, power + 1, power + 99, power + 100);
    for (const n of values) expect(decimalText(n)).toBe(String(n));
  });

  it("writes random safe integers as String does", () => {
    for (let i = 0; i < 10_000; i++) {
      const n = Math.floor(Math.random() * Number.MAX_SAFE_INTEGER);
      expect(decimalText(n)).toBe(String(n));
    }
  });
});
