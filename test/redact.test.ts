import { describe, expect, it } from "vitest";
import { MIN_SECRET_LENGTH, noRedaction, secretRedactor } from "../src/redact.js";

describe("secretRedactor", () => {
  it("is the identity without secrets, and ignores values too short to be keys", () => {
    expect(secretRedactor([undefined, "", "short"])).toBe(noRedaction);
    expect(secretRedactor(["x".repeat(MIN_SECRET_LENGTH - 1)]).active).toBe(false);
  });

  it("replaces every occurrence, the longer of two overlapping secrets whole", () => {
    const r = secretRedactor(["sk-abcdefgh", "sk-abcdefgh-long-tail"]);
    expect(r.text("a sk-abcdefgh-long-tail b sk-abcdefgh c sk-abcdefgh")).toBe("a *** b *** c ***");
  });

  it("cleans nested strings in place and keeps everything else", () => {
    const r = secretRedactor(["sk-0123456789"]);
    const reason = { kind: "model-error", message: "bad key sk-0123456789", httpStatus: 401 };
    const data = { turn: 1, reason, blocks: [{ type: "text", text: "sk-0123456789!" }, null, 3] };
    expect(r.inPlace(data)).toBe(data);
    expect(data).toEqual({ turn: 1, reason: { kind: "model-error", message: "bad key ***", httpStatus: 401 }, blocks: [{ type: "text", text: "***!" }, null, 3] });
    expect(reason.message).toBe("bad key ***");
  });

  it("cleans at any depth without overflowing the stack", () => {
    const r = secretRedactor(["sk-0123456789"]);
    const leaf = { text: "sk-0123456789" };
    let deep: unknown = leaf;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => r.inPlace(deep)).not.toThrow();
    expect(leaf.text).toBe("***");
  });
});
