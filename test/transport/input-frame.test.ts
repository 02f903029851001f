/**
 * parseInputLine decides what an input line is to the server (src/transport/input-frame.ts);
 * test/transport/server-endpoint.test.ts checks the same answers on the wire.
 */
import { describe, expect, it } from "vitest";
import { parseInputLine, usableId } from "../../src/transport/input-frame.js";
import { ErrorCode } from "../../src/protocol/errors.js";

describe("parseInputLine", () => {
  it("skips blank lines", () => {
    expect(parseInputLine("")).toBeUndefined();
    expect(parseInputLine("  \t ")).toBeUndefined();
  });

  it("takes a well-formed request, with or without params", () => {
    expect(parseInputLine('{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}')).toEqual({ type: "request", id: 7, method: "m", params: { a: 1 } });
    expect(parseInputLine('{"jsonrpc":"2.0","id":"x","method":"m"}')).toEqual({ type: "request", id: "x", method: "m", params: undefined });
  });

  it.each([
    ["not json", null, ErrorCode.ParseError, "parse-error"],
    ["[1,2]", null, ErrorCode.InvalidRequest, "not-an-object"],
    ["null", null, ErrorCode.InvalidRequest, "not-an-object"],
    ['{"jsonrpc":"2.0","id":3}', 3, ErrorCode.InvalidRequest, "invalid-request"],
    ['{"jsonrpc":"2.0","id":1e400,"method":"m"}', null, ErrorCode.InvalidRequest, "invalid-request"],
    ['{"jsonrpc":"2.0","id":{},"method":"m"}', null, ErrorCode.InvalidRequest, "invalid-request"],
    ['{"jsonrpc":"1.0","id":1,"method":"m"}', 1, ErrorCode.InvalidRequest, "invalid-request"],
    ['{"jsonrpc":"2.0","id":1,"method":5}', 1, ErrorCode.InvalidRequest, "invalid-request"],
    ['{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}', 1, ErrorCode.InvalidParams, "invalid-params"],
    ['{"jsonrpc":"2.0","id":1,"method":"m","params":"p"}', 1, ErrorCode.InvalidRequest, "invalid-request"],
    [`{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":${"[".repeat(200)}${"]".repeat(200)}}}`, 2, ErrorCode.InvalidRequest, "too-deep"],
  ])("answers %s with an error (id %s, code %i, kind %s)", (line, id, code, kind) => {
    const frame = parseInputLine(line);
    expect(frame).toMatchObject({ type: "invalid", id, code, kind });
  });

  it("ignores response- and notification-shaped frames, describing them without their contents", () => {
    const notification = parseInputLine('{"jsonrpc":"2.0","method":{"deep":"secret"}}');
    expect(notification?.type).toBe("ignored");
    expect(notification?.type === "ignored" && notification.why()).toContain("method an object");
    const response = parseInputLine(`{"jsonrpc":"2.0","id":"${"x".repeat(500)}","result":{}}`);
    expect(response?.type).toBe("ignored");
    expect(response?.type === "ignored" && response.why().length).toBeLessThan(300);
  });
});

describe("usableId", () => {
  it("keeps strings and numbers a response can echo exactly", () => {
    expect(usableId("a")).toBe("a");
    expect(usableId(-3)).toBe(-3);
    expect(usableId(1.5)).toBe(1.5);
    expect(usableId(2 ** 53 - 1)).toBe(2 ** 53 - 1);
  });

  it("refuses what would come back as another id", () => {
    expect(usableId(2 ** 64)).toBeNull();
    expect(usableId(Infinity)).toBeNull();
    expect(usableId(NaN)).toBeNull();
    expect(usableId(null)).toBeNull();
    expect(usableId(true)).toBeNull();
  });
});
