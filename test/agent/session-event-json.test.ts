/**
 * The JSON text a session encodes an event to once (src/agent/session.ts `emit`), for its log
 * line and its notification both: `JSON.stringify(event)` byte for byte, however the event types
 * alternate, in one session or across two (the head before `seq` is kept per event type).
 */
import { describe, expect, it } from "vitest";
import { Session } from "../../src/agent/session.js";
import type { SessionEvent } from "../../src/protocol/index.js";

describe("Session.emit's event JSON", () => {
  it("is JSON.stringify(event) for a turn's events and for two sessions taking turns", () => {
    const seen: Array<{ event: SessionEvent; json: string | undefined }> = [];
    const announce = (_id: string, event: SessionEvent, json: string | undefined) => void seen.push({ event, json });
    const a = new Session("a", undefined, announce);
    const b = new Session("b", undefined, announce);
    for (const s of [a, b, a]) {
      s.emit("user/message", { id: "msg_1", content: [{ type: "text", text: "hi \"there\"\n" }] });
      s.emit("turn/start", { turn: 1 });
      s.emit("step/start", { turn: 1, step: 1 });
      s.emit("assistant/chunk", { turn: 1, step: 1, chunk: { type: "text-delta", text: "é\u2028" } });
      s.emit("step/start", { turn: 1, step: 2 });
      s.emit("turn/end", { turn: 1, reason: { kind: "completed" } });
    }
    expect(seen).toHaveLength(18);
    for (const { event, json } of seen) expect(json).toBe(JSON.stringify(event));
    expect(seen.map(({ event }) => event.seq)).toEqual([1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });
});
