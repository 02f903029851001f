/**
 * The MCP transports against hostile or broken servers: an endless line, lines that are not
 * JSON-RPC, helpers left in the server's process group, response bodies past the cap, a server
 * slow to take requests while more keep coming.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpHttpServerConfig } from "../../src/protocol/mcp-types.js";
import { RequestLimiter, cappedFetch, httpTransport } from "../../src/mcp/http-transport.js";
import { MAX_LINE_BYTES, ProcessGroupTransport } from "../../src/mcp/stdio-transport.js";
import { gone } from "../support/mcp-servers.js";
import { accepted, answerJson, handMcpServer, initializeResult, isRequest } from "../support/mcp-http-server.js";

const transports: ProcessGroupTransport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()));
});

function server(script: string): { t: ProcessGroupTransport; messages: any[]; errors: Error[]; closed: Promise<void> } {
  const t = new ProcessGroupTransport({ command: process.execPath, args: ["-e", script], cwd: process.cwd(), env: process.env });
  transports.push(t);
  const messages: any[] = [];
  const errors: Error[] = [];
  const closed = new Promise<void>((resolve) => {
    t.onclose = resolve;
  });
  t.onmessage = (m) => messages.push(m);
  t.onerror = (e) => errors.push(e);
  return { t, messages, errors, closed };
}

describe("the stdio transport", () => {
  it("ends the connection (and the server) on a line longer than the limit, without buffering it whole", async () => {
    const { t, errors, closed } = server(`const chunk = "x".repeat(1 << 20); (function w() { while (process.stdout.write(chunk)); process.stdout.once("drain", w); })();`);
    await t.start();
    await closed;
    expect(errors.map((e) => e.message)).toContain(`the MCP server wrote a line longer than ${MAX_LINE_BYTES} bytes`);
    await gone(t.pid!);
  });

  it("reports a line that is not JSON-RPC and goes on reading; a frame split across writes arrives whole", async () => {
    const { t, messages, errors } = server(
      `process.stdout.write("booting...\\n{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"a\\"}\\n{\\"jsonrpc\\":"); setTimeout(() => process.stdout.write("\\"2.0\\",\\"method\\":\\"b\\"}\\r\\n"), 50); setInterval(() => {}, 1000);`,
    );
    await t.start();
    for (let i = 0; i < 200 && messages.length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    expect(messages).toEqual([{ jsonrpc: "2.0", method: "a" }, { jsonrpc: "2.0", method: "b" }]);
    expect(errors[0].message).toContain("not a JSON-RPC message");
  });

  it("close() ends the whole process group, a helper the server started included; its exit is known", async () => {
    const { t, messages, closed } = server(
      `const c = require("node:child_process").spawn("sleep", ["1000"], { stdio: "ignore" }); console.log(JSON.stringify({ jsonrpc: "2.0", method: "pid", params: { pid: c.pid } })); setInterval(() => {}, 1000);`,
    );
    await t.start();
    for (let i = 0; i < 200 && messages.length < 1; i++) await new Promise((r) => setTimeout(r, 25));
    const helper = messages[0].params.pid as number;
    await t.close();
    await closed;
    await gone(t.pid!);
    await gone(helper);
    await t.exited;
    expect(["SIGTERM", "SIGKILL"]).toContain(t.exit?.signal);
    await expect(t.send({ jsonrpc: "2.0", method: "late" })).rejects.toThrow("closed");
  });
});

describe("the stdio transport's helpers that left the group", () => {
  it("close() ends the server's descendants that left its process group (setsid), one that ignores SIGTERM and what it started included", async () => {
    // Node's `detached` is setsid: each helper leads a session and group of its own.
    const helper = `process.on("SIGTERM", () => {}); require("node:child_process").spawn("sleep", ["1000"], { stdio: "ignore" }); setInterval(() => {}, 1000);`;
    const { t, messages, closed } = server(
      `const { spawn } = require("node:child_process");
       const a = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
       const b = spawn(process.execPath, ["-e", ${JSON.stringify(helper)}], { detached: true, stdio: "ignore" });
       setTimeout(() => console.log(JSON.stringify({ jsonrpc: "2.0", method: "pids", params: { pids: [a.pid, b.pid] } })), 300);
       setInterval(() => {}, 1000);`,
    );
    await t.start();
    for (let i = 0; i < 200 && messages.length < 1; i++) await new Promise((r) => setTimeout(r, 25));
    const [sleeper, stubborn] = messages[0].params.pids as number[];
    const grandchild = Number(fs.readFileSync(`/proc/${stubborn}/task/${stubborn}/children`, "utf8").trim());
    expect(grandchild).toBeGreaterThan(0);
    try {
      await t.close();
      await closed;
      await gone(t.pid!);
      await gone(sleeper);
      await gone(stubborn);
      await gone(grandchild);
    } finally {
      for (const pid of [sleeper, stubborn, grandchild]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone, as it should be */
        }
      }
    }
  }, 30_000);
});

describe("the stdio transport's helpers that leave the group when signalled", () => {
  it("close() ends a helper in the server's group whose SIGTERM handler calls setsid (the server ignoring SIGTERM)", async () => {
    // The helper leaves the group a little after the group's SIGTERM, which it ignores: the group's SIGKILL misses it.
    const helper = `use POSIX; $| = 1; $SIG{TERM} = sub { select(undef, undef, undef, 0.3); POSIX::setsid() }; print "ready\\n"; sleep 1 while 1;`;
    const { t, messages, closed } = server(
      `const c = require("node:child_process").spawn("perl", ["-e", ${JSON.stringify(helper)}], { stdio: ["ignore", "pipe", "ignore"] });
       c.stdout.once("data", () => console.log(JSON.stringify({ jsonrpc: "2.0", method: "pid", params: { pid: c.pid } })));
       process.on("SIGTERM", () => {});
       setInterval(() => {}, 1000);`,
    );
    await t.start();
    for (let i = 0; i < 200 && messages.length < 1; i++) await new Promise((r) => setTimeout(r, 25));
    const leaver = messages[0].params.pid as number;
    try {
      await t.close();
      await closed;
      await gone(t.pid!);
      await gone(leaver);
    } finally {
      try {
        process.kill(leaver, "SIGKILL");
      } catch {
        /* gone, as it should be */
      }
    }
  }, 30_000);
});

describe("the HTTP transport's fetch", () => {
  it("errors a response body past the cap, and passes one within it", async () => {
    const srv = http.createServer((req, res) => {
      const n = req.url === "/big" ? 3 : 1;
      res.writeHead(200, { "content-type": "application/octet-stream" });
      for (let i = 0; i < n; i++) res.write(Buffer.alloc(400 * 1024, 1));
      res.end();
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    try {
      const capped = cappedFetch(1024 * 1024);
      expect((await (await capped(`${base}/small`)).arrayBuffer()).byteLength).toBe(400 * 1024);
      await expect((await capped(`${base}/big`)).arrayBuffer()).rejects.toThrow(/passed 1048576 bytes/);
    } finally {
      srv.close();
    }
  });
});

describe("the HTTP transport's requests in flight", () => {
  it("(the bound on the bridge's answers to a server's requests) at most the bound wait for headers at once; past the queue's bound a request fails and the overflow is reported; a queued request's abort leaves the queue", async () => {
    let open = 0;
    let most = 0;
    const held: http.ServerResponse[] = [];
    const srv = http.createServer((req, res) => {
      open++;
      most = Math.max(most, open);
      res.on("close", () => open--);
      held.push(res);
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
    const overflows: string[] = [];
    const limiter = new RequestLimiter(3, 4, (error) => overflows.push(error.message));
    // As HttpTransport sends an answer to the server's request: a slot held until the headers.
    const capped = async (target: string, init: RequestInit) => {
      const release = await limiter.enter(init.signal);
      try {
        return await fetch(target, init);
      } finally {
        release();
      }
    };
    try {
      const answered = Array.from({ length: 6 }, () => capped(url, { method: "POST", body: "{}" }));
      const aborted = new AbortController();
      const gone = capped(url, { method: "POST", body: "{}", signal: aborted.signal });
      await expect.poll(() => held.length).toBe(3);
      aborted.abort(new Error("cancelled"));
      await expect(gone).rejects.toThrow("cancelled");
      // 3 in flight and 3 queued: one more fits, the next is refused.
      const last = capped(url, { method: "POST", body: "{}" });
      await expect(capped(url, { method: "POST", body: "{}" })).rejects.toThrow("the MCP server does not take its requests (3 waiting for an answer, 4 more queued)");
      expect(overflows).toHaveLength(1);
      // Each answer lets one queued request go; every request kept is answered, never more than 3 at once.
      for (let i = 0; i < 7; i++) {
        await expect.poll(() => held.length).toBeGreaterThan(i);
        held[i]!.writeHead(202).end();
      }
      for (const response of [...answered, last]) expect((await response).status).toBe(202);
      expect(most).toBe(3);
      expect(held).toHaveLength(7);
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });
});

describe("the HTTP transport's calls that never answer", () => {
  it("calls the bridge gave up on (timed out) never stop the server's other calls: 80 hung calls, then one that answers", async () => {
    // A server in JSON-response mode: a call's headers come with its answer, and `hang` never answers.
    const held: http.ServerResponse[] = [];
    const srv = await handMcpServer((message, res) => {
      if (!isRequest(message)) return accepted(res);
      if (message.method === "initialize") answerJson(res, message.id, initializeResult(message));
      else if (message.method === "tools/list") answerJson(res, message.id, { tools: [] });
      else if (message.method === "tools/call" && message.params!.name === "hang") held.push(res);
      else answerJson(res, message.id, { content: [{ type: "text", text: "ran ok" }] });
    });
    const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
    try {
      await client.connect(httpTransport({ url: srv.url } as McpHttpServerConfig));
      const hung = await Promise.allSettled(Array.from({ length: 80 }, () => client.callTool({ name: "hang", arguments: {} }, undefined, { timeout: 200 })));
      expect(hung.every((r) => r.status === "rejected")).toBe(true);
      const ok = await client.callTool({ name: "ok", arguments: {} }, undefined, { timeout: 5000 });
      expect(ok.content).toEqual([{ type: "text", text: "ran ok" }]);
    } finally {
      await client.close();
      srv.close();
    }
  }, 30_000);
});

describe("the HTTP transport's answers to a server's requests", () => {
  it("a server flooding pings on a stream and never taking the answers: at most 64 answers wait at once, while a call of the bridge's own still goes out", async () => {
    let answersHeld = 0;
    let callsSeen = 0;
    const srv = await handMcpServer((message, res) => {
      if (message.method === undefined) return void answersHeld++; // an answer: never taken
      callsSeen++;
      if (message.method !== "flood") return answerJson(res, message.id, {});
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (let i = 0; i < 200; i++) res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: `ping-${i}`, method: "ping" })}\n\n`);
    });
    const transport = httpTransport({ url: srv.url } as McpHttpServerConfig);
    const pings: string[] = [];
    transport.onmessage = (m) => {
      if ("method" in m && m.method === "ping" && "id" in m) {
        pings.push(String(m.id));
        void transport.send({ jsonrpc: "2.0", id: m.id, result: {} }).catch(() => undefined);
      }
    };
    try {
      await transport.start();
      void transport.send({ jsonrpc: "2.0", id: 1, method: "flood" }).catch(() => undefined);
      await expect.poll(() => pings.length, { timeout: 10_000 }).toBe(200);
      await expect.poll(() => answersHeld, { timeout: 10_000 }).toBe(64);
      await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
      expect(callsSeen).toBe(2);
      await new Promise((r) => setTimeout(r, 200));
      expect(answersHeld).toBe(64);
    } finally {
      await transport.close();
      srv.close();
    }
  }, 30_000);
});

describe("the HTTP transport's requests given up on", () => {
  it("a tools/list past its timeout, a call aborted by its caller, a call on a resumable SSE stream: each one's connection is closed at once, no resumption of it is opened, the answered call is not touched", async () => {
    const held: Array<{ what: string; closed: boolean }> = [];
    let resumptions = 0;
    const srv = await handMcpServer(
      (message, res) => {
        if (!isRequest(message)) return accepted(res);
        if (message.method === "initialize") return answerJson(res, message.id, initializeResult(message));
        if (message.method === "tools/call" && message.params!.name === "ok") return answerJson(res, message.id, { content: [{ type: "text", text: "ran ok" }] });
        const entry = { what: message.method === "tools/call" ? message.params!.name! : message.method!, closed: false };
        res.on("close", () => (entry.closed = !res.writableFinished));
        held.push(entry);
        // A resumable stream: its first event has an id, the SDK reconnects with it if the stream ends unanswered.
        if (entry.what === "resumable") res.writeHead(200, { "content-type": "text/event-stream" }).write("id: e1\ndata: \n\n");
      },
      (req, res) => {
        if (req.headers["last-event-id"]) resumptions++;
        res.writeHead(405).end();
      },
    );
    const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
    try {
      await client.connect(httpTransport({ url: srv.url } as McpHttpServerConfig));
      await expect(client.listTools(undefined, { timeout: 200 })).rejects.toThrow("Request timed out");
      const aborted = new AbortController();
      const abortedCall = client.callTool({ name: "aborted", arguments: {} }, undefined, { signal: aborted.signal });
      await expect.poll(() => held.length).toBe(2);
      aborted.abort(new Error("the turn was cancelled"));
      await expect(abortedCall).rejects.toThrow("the turn was cancelled");
      await expect(client.callTool({ name: "resumable", arguments: {} }, undefined, { timeout: 200 })).rejects.toThrow("Request timed out");
      expect(held.map((h) => h.what)).toEqual(["tools/list", "aborted", "resumable"]);
      await expect.poll(() => held.filter((h) => h.closed).length, { timeout: 10_000 }).toBe(3);
      const ok = await client.callTool({ name: "ok", arguments: {} }, undefined, { timeout: 5000 });
      expect(ok.content).toEqual([{ type: "text", text: "ran ok" }]);
      // The SDK would resume an unanswered stream that ended (after 1 s, then 2 s): a given-up one is not.
      await new Promise((r) => setTimeout(r, 3500));
      expect(resumptions).toBe(0);
    } finally {
      await client.close();
      srv.close();
    }
  }, 30_000);
});

describe("the HTTP transport's notifications/cancelled", () => {
  it("a server that takes nothing after the start: the given-up call's connection and its cancel's are both closed by the bridge", async () => {
    const held: Array<{ what: string; closed: boolean }> = [];
    const srv = await handMcpServer((message, res) => {
      if (message.method === "initialize") return answerJson(res, message.id, initializeResult(message));
      if (message.method === "notifications/initialized") return accepted(res);
      const entry = { what: message.method!, closed: false };
      res.on("close", () => (entry.closed = !res.writableFinished));
      held.push(entry);
    });
    const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
    try {
      await client.connect(httpTransport({ url: srv.url } as McpHttpServerConfig, undefined, 300));
      await expect(client.callTool({ name: "hang", arguments: {} }, undefined, { timeout: 200 })).rejects.toThrow("Request timed out");
      await expect.poll(() => held.map((h) => h.what)).toEqual(["tools/call", "notifications/cancelled"]);
      await expect.poll(() => held.filter((h) => h.closed).length, { timeout: 10_000 }).toBe(2);
    } finally {
      await client.close();
      srv.close();
    }
  }, 30_000);
});
