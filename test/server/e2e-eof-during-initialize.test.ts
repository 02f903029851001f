/**
 * End of input read while `initialize` is still under way (an MCP server still connecting), the
 * way `cat requests.jsonl | harness-bridge --stdio` or a client that writes its requests and
 * closes stdin sends it: no answer can come, so every wait on the client (a hook, an approval, a
 * client tool call) of the turns that start afterwards must end at once, as at an EOF read later
 * (docs/guarantees.md "Waits on the client"). The runtime built after the EOF once missed it, and
 * each wait held its turn, and the bridge's exit, for the whole `clientToolTimeoutMs` (default ten
 * minutes). Without the fix these tests time out.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
beforeEach(() => {
  ws = tempWorkspace("hb-eof-init-");
  ws.file("a.txt", "contents of a\n");
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object" }, readOnly: true };
// A stdio MCP server that says nothing and exits after 2 s: `initialize` waits for it, so the
// EOF written right after the prompt is read while `initialize` is under way.
const slowServer = { slow: { command: "sleep", args: ["2"] } };

/** initialize (held by the slow server), a prompt, then end of input; resolves with the prompt's answer and the exit. */
async function pipedRun(script: object, extra: object): Promise<{ c: RawClient; prompt: any; code: number | null }> {
  const c = new RawClient();
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script as any), { mcpServers: slowServer, ...extra }));
  c.request("p", "session/prompt", promptParams("s"));
  c.child.stdin.end();
  expect((await c.response("init")).error).toBeUndefined();
  const prompt = await c.response("p");
  const { code } = await c.exit();
  return { c, prompt, code };
}

const ofType = (c: RawClient, type: string) => c.events("s").filter((e) => e.type === type);

describe("end of input read while initialize is under way", () => {
  it("a hook waiting in the turn started afterwards is skipped at once, saying the input closed", async () => {
    const { c, prompt, code } = await pipedRun(oneTurn({ text: "done" }), { hooks: ["stop"] });
    expect(prompt.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(ofType(c, "hook/decision")[0].data.skipped).toContain("closed its input");
    expect(code).toBe(0);
  }, 60_000);

  it("an approval is a recorded deny at once, and the turn goes on", async () => {
    const script = oneTurn({ toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "done" });
    const { c, prompt, code } = await pipedRun(script, { approvals: "always" });
    expect(prompt.result.status).toBe("ok");
    expect(ofType(c, "permission/decision")[0].data).toMatchObject({ decision: "deny", message: expect.stringContaining("closed its input") });
    expect(ofType(c, "tool/result")[0].data.isError).toBe(true);
    expect(code).toBe(0);
  }, 60_000);

  it("a client tool call gets its error result at once, and the turn goes on", async () => {
    const script = oneTurn({ toolCalls: [{ id: "c1", name: "lookup", arguments: { word: "x" } }] }, { text: "done" });
    const { c, prompt, code } = await pipedRun(script, { clientTools: [lookup] });
    expect(prompt.result.status).toBe("ok");
    expect(ofType(c, "tool/result")[0].data).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringContaining("closed its input") }] });
    expect(code).toBe(0);
  }, 60_000);
});
