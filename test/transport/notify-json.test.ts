/**
 * `ServerEndpoint.notifyJson` (src/transport/server-endpoint.ts): a notification whose params'
 * last value comes already encoded is the same line, byte for byte, as `notify` writes for the
 * same params, whichever method and params head came before it (the endpoint keeps the line's
 * head for a run of frames with the same two).
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ServerEndpoint } from "../../src/transport/server-endpoint.js";

async function lines(write: (endpoint: ServerEndpoint) => void): Promise<string[]> {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const endpoint = new ServerEndpoint({ input, output });
  endpoint.start();
  write(endpoint);
  await endpoint.flush();
  input.destroy();
  return text.split("\n").slice(0, -1);
}

describe("notifyJson", () => {
  it("writes the line notify writes, across changes of session, of method and back", async () => {
    const sent: Array<{ method: "session.event" | "subagent.started"; sessionId: string; event: object }> = [
      { method: "session.event", sessionId: "s1", event: { type: "turn/start", seq: 1, data: { turn: 1 } } },
      { method: "session.event", sessionId: "s1", event: { type: "step/start", seq: 2, data: { turn: 1, step: 1 } } },
      { method: "session.event", sessionId: "child \"é\"", event: { type: "turn/start", seq: 1, data: { turn: 1 } } },
      { method: "subagent.started", sessionId: "s1", event: { x: 1 } },
      { method: "session.event", sessionId: "s1", event: { type: "turn/end", seq: 3, data: { turn: 1, reason: { kind: "completed" } } } },
    ];
    const viaJson = await lines((endpoint) => {
      for (const { method, sessionId, event } of sent) void endpoint.notifyJson(method, `{"sessionId":${JSON.stringify(sessionId)},"event":`, JSON.stringify(event));
    });
    const viaNotify = await lines((endpoint) => {
      for (const { method, sessionId, event } of sent) void endpoint.notify(method, { sessionId, event } as never);
    });
    expect(viaJson).toEqual(viaNotify);
    expect(viaJson).toHaveLength(sent.length);
    expect(JSON.parse(viaJson[2])).toEqual({ jsonrpc: "2.0", method: "session.event", params: { sessionId: "child \"é\"", event: sent[2].event } });
  });
});
