/**
 * MCP calls the bridge gave up on, over streamable HTTP, through the built binary: a call past
 * its `toolTimeoutMs` or of a cancelled turn releases its connection at once (the bridge aborts
 * that call's POST), whether the server withholds its response's headers or opened an SSE
 * stream it never answers on; a server that never answers thus cannot pile up the bridge's
 * sockets. A call that got its answer is not affected, nor another session's call on the same
 * server, and the bridge goes on serving.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accepted, answerJson, handMcpServer, initializeResult, isRequest, type HandServer } from "../support/mcp-http-server.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
const servers: HandServer[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-mcp-given-up-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const srv of servers.splice(0)) srv.close();
  ws.cleanup();
});

interface Held {
  tool: string;
  /** Whether the connection carrying the call closed (its response was never finished). */
  closed: boolean;
  answer: (text: string) => void;
}

/**
 * A streamable HTTP MCP server on 127.0.0.1: `ok` answers at once; `hang` withholds its
 * response's headers, `hang_sse` opens an SSE stream and writes nothing; each held call is
 * listed in `held`, with whether its connection is still open.
 */
async function neverAnswering(): Promise<{ url: string; held: Held[] }> {
  const held: Held[] = [];
  const srv = await handMcpServer((message, res) => {
    if (!isRequest(message)) return accepted(res);
    const tool = message.params?.name ?? "";
    if (message.method === "initialize") return answerJson(res, message.id, initializeResult(message));
    if (message.method === "tools/list") return answerJson(res, message.id, { tools: ["ok", "hang", "hang_sse"].map((name) => ({ name, inputSchema: { type: "object" } })) });
    if (message.method !== "tools/call" || tool === "ok") return answerJson(res, message.id, { content: [{ type: "text", text: "ran ok" }] });
    if (tool === "hang_sse") res.writeHead(200, { "content-type": "text/event-stream" }).flushHeaders();
    const entry: Held = {
      tool,
      closed: false,
      answer: (text) => {
        const result = { content: [{ type: "text", text }] };
        if (tool === "hang_sse") res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message.id, result })}\n\n`);
        else answerJson(res, message.id, result);
      },
    };
    res.on("close", () => {
      if (!res.writableFinished) entry.closed = true;
    });
    held.push(entry);
  });
  servers.push(srv);
  return { url: `${srv.url}mcp`, held };
}

async function initialized(model: string, mcpServers: object): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, model, { mcpServers }));
  const res = await c.response("init", 30_000);
  expect(res.error).toBeUndefined();
  expect(res.result.mcpServers.map((s: any) => s.status)).toEqual(["connected"]);
  return c;
}

const call = (id: string, name: string) => ({ id, name, arguments: {} });
const text = (result: any): string => result.content.map((b: any) => b.text).join("");
const results = (c: RawClient, sessionId: string): Record<string, any> =>
  Object.fromEntries(c.events(sessionId).filter((e) => e.type === "tool/result").map((e) => [e.data.callId, e.data]));

describe("an MCP call the bridge gave up on", () => {
  it("past toolTimeoutMs: each call's connection is closed by the bridge, held headers or an open SSE stream alike; the answered call and the next turn are not affected", async () => {
    const { url, held } = await neverAnswering();
    const hung = ["h0", "h1", "h2", "s0", "s1", "s2"];
    const steps = oneTurn(
      { toolCalls: hung.map((id) => call(id, id.startsWith("h") ? "mcp__n__hang" : "mcp__n__hang_sse")) },
      { toolCalls: [call("ok", "mcp__n__ok")] },
      { text: "done" },
    );
    const c = await initialized(ws.script("s.json", steps), { n: { url, toolTimeoutMs: 300 } });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p", 60_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const byId = results(c, "s");
    for (const id of hung) expect(text(byId[id])).toContain("did not answer this call within 300 ms (toolTimeoutMs)");
    expect(byId.ok).toMatchObject({ isError: false, content: [{ type: "text", text: "ran ok" }] });
    expect(held.map((h) => h.tool).sort()).toEqual(["hang", "hang", "hang", "hang_sse", "hang_sse", "hang_sse"]);
    await expect.poll(() => held.filter((h) => h.closed).length, { timeout: 15_000 }).toBe(6);
    // The bridge goes on: the next turn's call of the same server is answered.
    c.request("p2", "session/prompt", promptParams("s"));
    expect((await c.response("p2", 60_000)).result.status).toBe("ok");
    c.request("x", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 90_000);

  it("of a cancelled turn: that call's connection is closed by the bridge, while another session's call on the same server goes on and gets its answer", async () => {
    const { url, held } = await neverAnswering();
    const c = await initialized(ws.script("s.json", oneTurn({ toolCalls: [call("h", "mcp__n__hang_sse")] }, { text: "done" })), { n: { url } });
    c.request("pa", "session/prompt", promptParams("a"));
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(1);
    c.request("pb", "session/prompt", promptParams("b"));
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(2);
    c.request("x", "session/cancel", { sessionId: "a" });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    expect((await c.response("pa")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    await expect.poll(() => held[0]!.closed, { timeout: 15_000 }).toBe(true);
    expect(held[1]!.closed).toBe(false);
    held[1]!.answer("ran hang for b");
    expect((await c.response("pb", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(results(c, "b").h).toMatchObject({ isError: false, content: [{ type: "text", text: "ran hang for b" }] });
    c.request("y", "shutdown", {});
    c.end();
    expect((await c.exit()).code).toBe(0);
  }, 90_000);
});
