/**
 * The HTTP transport's record of the bridge's requests awaiting their answers
 * (src/mcp/http-transport.ts `unanswered`): an answered request leaves nothing behind however
 * the server spells its id, or a server answering in its own spelling grows the bridge's
 * memory with every call.
 */
import type * as http from "node:http";
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpHttpServerConfig } from "../../src/protocol/mcp-types.js";
import { httpTransport, type HttpTransport } from "../../src/mcp/http-transport.js";
import { accepted, answerJson, handMcpServer, initializeResult, isRequest, type HandServer } from "../support/mcp-http-server.js";

/** A JSON-response server that echoes each request's id through `echo` (the SDK takes 7 and "7" alike). */
function server(echo: (id: number) => unknown): Promise<HandServer> {
  return handMcpServer((message, res) => {
    if (!isRequest(message)) return accepted(res);
    const result = message.method === "initialize" ? initializeResult(message) : message.method === "tools/list" ? { tools: [] } : { content: [{ type: "text", text: "ran ok" }] };
    answerJson(res, echo(message.id as number), result);
  });
}

const awaiting = (transport: HttpTransport) => (transport as unknown as { unanswered: Map<unknown, unknown> }).unanswered.size;

describe("the HTTP transport's requests answered", () => {
  for (const [how, echo] of [
    ["as sent (a number)", (id: number) => id],
    ["as a string", (id: number) => String(id)],
    ["as a string with a leading zero", (id: number) => `0${id}`],
  ] as const) {
    it(`a server that echoes the id ${how}: every call answered, none of them kept awaiting an answer`, async () => {
      const srv = await server(echo);
      const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
      const transport = httpTransport({ url: srv.url } as McpHttpServerConfig);
      try {
        await client.connect(transport);
        for (let i = 0; i < 20; i++) expect((await client.callTool({ name: "ok", arguments: {} }, undefined, { timeout: 5000 })).content).toEqual([{ type: "text", text: "ran ok" }]);
        await client.listTools();
        expect(awaiting(transport)).toBe(0);
      } finally {
        await client.close();
        srv.close();
      }
    }, 30_000);
  }
});

describe("the HTTP transport's requests answered on another stream", () => {
  it("a server that opens each call's POST as an SSE stream, answers on its GET stream and holds the POST open: each call answered, its POST closed by the bridge; a call answered on its own stream left for the server to end", async () => {
    const posts: Array<{ closed: boolean; byTheServer: boolean }> = [];
    let stream: http.ServerResponse | undefined;
    const srv = await handMcpServer(
      (message, res) => {
        if (!isRequest(message)) return accepted(res);
        if (message.method === "initialize") return answerJson(res, message.id, initializeResult(message));
        const post = { closed: false, byTheServer: false };
        res.on("close", () => Object.assign(post, { closed: true, byTheServer: res.writableFinished }));
        posts.push(post);
        res.writeHead(200, { "content-type": "text/event-stream" }).flushHeaders();
        const answer = { jsonrpc: "2.0", id: message.id, result: { content: [{ type: "text", text: "ran ok" }] } };
        const event = `event: message\ndata: ${JSON.stringify(answer)}\n\n`;
        // Every second call is answered on its own stream, which the server ends a little later: the bridge leaves it be.
        if (posts.length % 2 === 0) setTimeout(() => res.write(event) && setTimeout(() => res.end(), 300), 20);
        else setTimeout(() => stream!.write(event), 20);
      },
      (_req, res) => {
        stream = res.writeHead(200, { "content-type": "text/event-stream" });
        res.flushHeaders();
      },
    );
    const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
    try {
      await client.connect(httpTransport({ url: srv.url } as McpHttpServerConfig));
      await expect.poll(() => stream !== undefined).toBe(true);
      for (let i = 0; i < 6; i++) expect((await client.callTool({ name: "ok", arguments: {} }, undefined, { timeout: 5000 })).content).toEqual([{ type: "text", text: "ran ok" }]);
      expect(posts).toHaveLength(6);
      await expect.poll(() => posts.filter((p) => p.closed).length, { timeout: 5000 }).toBe(6);
      expect(posts.map((p) => p.byTheServer)).toEqual([false, true, false, true, false, true]);
    } finally {
      await client.close();
      srv.close();
    }
  }, 30_000);
});
