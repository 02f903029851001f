/**
 * A late answer and a repeated call id (docs/PROTOCOL.md "Content blocks", "Client tools"):
 * `session/tool_result` names its call by `callId` alone, and models repeat ids across steps and
 * turns (local OpenAI-compatible servers number them `call_0` each response). An answer to an
 * earlier request with that id — one that timed out, was cancelled, or that the client sent
 * twice — once settled the new call with the old call's result, silently. A call that repeats the
 * id of an earlier `tool/request` of its session now gets an id of its own (`<id>#2`), in the
 * same step, a later step, a later turn, and after the bridge restarted on the session's log; the
 * late answer is `unknown-call`.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
const roots: string[] = [];
beforeEach(() => {
  ws = tempWorkspace("hb-ctools-late-");
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
  ws.cleanup();
});

const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object" }, readOnly: true };

async function initialized(script: object, extra: object = {}, args = ["--stdio", "--no-session-log"]): Promise<RawClient> {
  const c = new RawClient({ args });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script as any), { clientTools: [lookup], ...extra }));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

function event(c: RawClient, type: string, n = 1): Promise<any> {
  return c
    .waitFrame((f) => f.method === "session.event" && c.events("s").filter((e) => e.type === type).length >= n, `${type} #${n}`)
    .then(() => c.events("s").filter((e) => e.type === type)[n - 1]);
}

const answer = (callId: string, text: string) => ({ sessionId: "s", callId, content: [{ type: "text", text }] });
const call = (word: string) => ({ toolCalls: [{ id: "call_0", name: "lookup", arguments: { word } }] });
const results = (c: RawClient) => c.events("s").filter((e) => e.type === "tool/result").map((e) => [e.data.callId, e.data.content[0].text]);

describe("a late answer to a call whose id the model repeats", () => {
  it("in a later step: the answer to the timed-out first request is unknown-call, and the second call gets its own id and answer", async () => {
    const c = await initialized(oneTurn(call("first"), call("second"), { text: "done" }), { clientToolTimeoutMs: 1000 });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await event(c, "tool/request", 1)).data.callId).toBe("call_0");
    await event(c, "tool/result", 1); // past its deadline
    const second = await event(c, "tool/request", 2);
    expect(second.data).toMatchObject({ callId: "call_0#2", arguments: { word: "second" } });
    c.request("late", "session/tool_result", answer("call_0", "for the first"));
    expect((await c.response("late")).error?.data?.kind).toBe("unknown-call");
    c.request("right", "session/tool_result", answer("call_0#2", "for the second"));
    expect((await c.response("right")).error).toBeUndefined();
    expect((await c.response("p")).result.status).toBe("ok");
    expect(results(c)).toEqual([
      ["call_0", expect.stringContaining("clientToolTimeoutMs")],
      ["call_0#2", "for the second"],
    ]);
    // The history pairs each result with its call: the assistant messages carry the same ids.
    const ids = c.events("s").filter((e) => e.type === "assistant/message").flatMap((e) => e.data.content.filter((b: any) => b.type === "tool-call").map((b: any) => b.id));
    expect(ids).toEqual(["call_0", "call_0#2"]);
  });

  it("in a later turn: an answer the client sends twice settles nothing the second time", async () => {
    const c = await initialized(turns([call("one"), { text: "a" }], [call("two"), { text: "b" }]));
    c.request("p1", "session/prompt", promptParams("s"));
    await event(c, "tool/request", 1);
    c.request("a1", "session/tool_result", answer("call_0", "one's"));
    expect((await c.response("p1")).result.status).toBe("ok");
    c.request("p2", "session/prompt", promptParams("s"));
    expect((await event(c, "tool/request", 2)).data.callId).toBe("call_0#2");
    c.request("again", "session/tool_result", answer("call_0", "one's, sent again"));
    expect((await c.response("again")).error?.data?.kind).toBe("unknown-call");
    c.request("a2", "session/tool_result", answer("call_0#2", "two's"));
    expect((await c.response("p2")).result.status).toBe("ok");
    expect(results(c).map(([, text]) => text)).toEqual(["one's", "two's"]);
  });

  it("after a restart on the session's log: the ids asked before are still taken", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-ctools-late-root-"));
    roots.push(root);
    const args = ["--stdio", "--session-root", root];
    const script = turns([call("one"), { text: "a" }], [call("two"), { text: "b" }]);
    const first = await initialized(script, {}, args);
    first.request("p1", "session/prompt", promptParams("s"));
    await event(first, "tool/request");
    first.request("a1", "session/tool_result", answer("call_0", "one's"));
    expect((await first.response("p1")).result.status).toBe("ok");
    await first.dispose();

    const second = await initialized(script, {}, args);
    second.request("p2", "session/prompt", promptParams("s"));
    expect((await event(second, "tool/request")).data.callId).toBe("call_0#2");
    second.request("a2", "session/tool_result", answer("call_0#2", "two's"));
    expect((await second.response("p2")).result.status).toBe("ok");
  });
});
