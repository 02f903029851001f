// The MCP peer of the round-trip benchmark: an MCP stdio server (the official TypeScript SDK)
// with one tool, `echo`, doing the same trivial work as a one-chunk scripted prompt: it returns
// the text it was given. Driven by bench/sections/roundtrip.py through the official `mcp` Python client.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench-echo", version: "1.0.0" });
server.registerTool("echo", { description: "Returns its text.", inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: "text", text }],
}));
await server.connect(new StdioServerTransport());
