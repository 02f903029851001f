/**
 * A tool-call id the model repeats within one step, over HTTP: a local DeepSeek-format server
 * streams one step with two calls that share one id (some OpenAI-compatible servers do), through
 * the built binary's deepseek route. Each call must run and get its own result (the second's id
 * `#2`, docs/PROTOCOL.md "Content blocks"), and the follow-up request must carry tool messages
 * that each answer a call of the assistant message before them — the fake refuses any other
 * pairing with DeepSeek's HTTP 400 (server-rules.ts deepseekToolPairingRefusal), as DeepSeek does.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import { promptParams } from "../support/raw-client.js";

const bridge = useDeepSeekBridge("hb-dup-ids-", { HARNESS_MAX_RETRIES: "0" });
const { server } = bridge;

const say = (text: string) => [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }];

/** One step whose calls all carry the id `id`, each at its own index (as such servers stream them). */
const sameIdStep = (id: string, calls: Array<[string, object]>) => ({
  events: [
    { delta: { role: "assistant", content: null, reasoning_content: "Both at once." } },
    ...calls.map(([name, args], index) => ({ delta: { tool_calls: [{ index, id, type: "function", function: { name, arguments: JSON.stringify(args) } }] } })),
    { delta: {}, finish_reason: "tool_calls" },
  ],
});

/** Pairs sorted by their first item (the call id), as the results of parallel calls may come in either order. */
const byId = <T extends [string, ...unknown[]]>(pairs: T[]): T[] => [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

const textOf = (content: unknown): string => (typeof content === "string" ? content : (content as Array<{ text: string }>).map((b) => b.text).join(""));

/** The follow-up request's assistant message with calls, and the tool messages after it, as [tool_call_id, text]. */
function pairing(request: { messages: Array<Record<string, any>> }): { callIds: string[]; toolMessages: Array<[string, string]> } {
  const at = request.messages.findIndex((m) => m.role === "assistant" && Array.isArray(m.tool_calls));
  const callIds = request.messages[at].tool_calls.map((c: { id: string }) => c.id);
  const toolMessages: Array<[string, string]> = [];
  for (const m of request.messages.slice(at + 1)) {
    if (m.role !== "tool") break;
    toolMessages.push([m.tool_call_id, textOf(m.content)]);
  }
  return { callIds, toolMessages };
}

describe("two calls of one step with one id, from a DeepSeek-format server", () => {
  it("built-in tools: both run, each result pairs with its own call, the follow-up is accepted and the turn ends ok", async () => {
    fs.writeFileSync(path.join(bridge.dir, "alpha.txt"), "alpha contents\n");
    fs.writeFileSync(path.join(bridge.dir, "beta.txt"), "beta contents\n");
    server.table = {
      "Read both.": [
        sameIdStep("call_0", [
          ["read_file", { path: "alpha.txt" }],
          ["read_file", { path: "beta.txt" }],
        ]),
        { events: say("Read them.") },
      ],
    };
    const c = await bridge.start();
    c.request("p", "session/prompt", promptParams("s", "Read both."));
    expect((await c.response("p", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const results = c.events("s").filter((e) => e.type === "tool/result").map((e): [string, boolean, string] => [e.data.callId, e.data.isError, textOf(e.data.content)]);
    expect(byId(results)).toEqual([
      ["call_0", false, "1\talpha contents"],
      ["call_0#2", false, "1\tbeta contents"],
    ]);
    // What DeepSeek is sent back: two calls with ids of their own, each answered by its own result.
    expect(server.requests).toHaveLength(2);
    const { callIds, toolMessages } = pairing(server.requests[1]);
    expect(callIds).toEqual(["call_0", "call_0#2"]);
    expect(byId(toolMessages)).toEqual([
      ["call_0", "1\talpha contents"],
      ["call_0#2", "1\tbeta contents"],
    ]);
    expect(server.problems).toEqual([]);
  });

  it("client tools, answered in reverse order: each answer reaches its own call and goes back to the server with that call's id", async () => {
    const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: { word: { type: "string" } } }, readOnly: true };
    server.table = {
      "Look both up.": [
        sameIdStep("dup", [
          ["lookup", { word: "one" }],
          ["lookup", { word: "two" }],
        ]),
        { events: say("Looked up.") },
      ],
    };
    const c = await bridge.start({}, undefined, { clientTools: [lookup] });
    c.request("p", "session/prompt", promptParams("s", "Look both up."));
    await c.waitFrame(() => c.events("s").filter((e) => e.type === "tool/request").length === 2, "two tool/requests", 15_000);
    const requests = c.events("s").filter((e) => e.type === "tool/request").map((e) => e.data);
    expect(requests).toEqual([
      { callId: "dup", name: "lookup", arguments: { word: "one" } },
      { callId: "dup#2", name: "lookup", arguments: { word: "two" } },
    ]);
    c.request("a2", "session/tool_result", { sessionId: "s", callId: "dup#2", content: [{ type: "text", text: "two means 2" }] });
    c.request("a1", "session/tool_result", { sessionId: "s", callId: "dup", content: [{ type: "text", text: "one means 1" }] });
    expect((await c.response("a2")).result).toEqual({});
    expect((await c.response("a1")).result).toEqual({});
    expect((await c.response("p", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const results = c.events("s").filter((e) => e.type === "tool/result").map((e): [string, boolean, string] => [e.data.callId, e.data.isError, textOf(e.data.content)]);
    expect(byId(results)).toEqual([
      ["dup", false, "one means 1"],
      ["dup#2", false, "two means 2"],
    ]);
    const { callIds, toolMessages } = pairing(server.requests[1]);
    expect(callIds).toEqual(["dup", "dup#2"]);
    expect(byId(toolMessages)).toEqual([
      ["dup", "one means 1"],
      ["dup#2", "two means 2"],
    ]);
    expect(server.problems).toEqual([]);
  });
});
