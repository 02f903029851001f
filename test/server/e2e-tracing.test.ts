/**
 * Tracing end to end: the built binary exports a tool turn's spans over OTLP/HTTP to a real
 * OpenTelemetry Collector (test/support/otel-collector.ts), and what the collector accepted and
 * forwarded is checked: the span names and tree (the client's traceparent as the turn's
 * parent, a subagent's turn under its `task` call), the GenAI attributes, the resource, no key
 * and no content unless opted in. Then what a user relies on without a collector: headers and
 * OTEL_SDK_DISABLED (a plain local receiver), and a collector that is down or never answers
 * leaves the turn and the exit alone.
 */
import * as http from "node:http";
import type * as net from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Collector, otelcolHere, otelcolNote, type ReceivedSpan } from "../support/otel-collector.js";
import { everything } from "../support/mcp-servers.js";
import { FakeDeepSeek, fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { RawClient, initParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const KEY = "sk-canary-7a6b5c4d3e2f";
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
const SECRET_TEXT = "the launch code is 0000";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-otel-");
  ws.file("notes.md", `${SECRET_TEXT}\nkey ${KEY}\n`);
  // A tool turn: read_file and a subagent (`task`), then an answer; usage with cache hits.
  ws.script("trace.json", {
    turns: [
      {
        steps: [
          {
            text: "looking",
            toolCalls: [
              { id: "call_read", name: "read_file", arguments: { path: "notes.md" } },
              { id: "call_task", name: "task", arguments: { prompt: "summarize notes.md", description: "summary" } },
            ],
            usage: { inputTokens: 120, outputTokens: 30, cacheHitTokens: 100, cacheMissTokens: 20 },
          },
          { text: "done", usage: { inputTokens: 200, outputTokens: 10, cacheHitTokens: 150, cacheMissTokens: 50 } },
        ],
      },
    ],
    subagent: { turns: [{ steps: [{ text: "a summary", usage: { inputTokens: 50, outputTokens: 5 } }] }] },
  });
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

function bridge(env: NodeJS.ProcessEnv): RawClient {
  const client = new RawClient({ env: { ...process.env, DEEPSEEK_API_KEY: KEY, ...env } });
  clients.push(client);
  return client;
}

/** One tool turn with the client's traceparent, then `shutdown` (which sends what is queued). */
async function tracedTurn(env: NodeJS.ProcessEnv, prompt = "read notes.md", init: object = {}) {
  const c = bridge(env);
  c.request(1, "initialize", initParams(ws.dir, "trace.json", init));
  expect((await c.response(1)).error).toBeUndefined();
  c.request(2, "session/prompt", { sessionId: "traced", contentBlocks: [{ type: "text", text: `${prompt} ${KEY}` }], traceparent: TRACEPARENT });
  const res = await c.response(2);
  c.request(3, "shutdown");
  await c.response(3);
  const exit = await c.exited;
  expect(c.badLines).toEqual([]); // stdout: protocol frames only
  return { res, exit, client: c };
}

function byName(spans: ReceivedSpan[], name: string): ReceivedSpan[] {
  return spans.filter((s) => s.name === name);
}

describe.skipIf(!otelcolHere)(`spans through a real OpenTelemetry Collector${otelcolNote}`, () => {
  let collector: Collector;
  beforeEach(async () => {
    collector = new Collector();
    await collector.start();
  });
  afterEach(() => collector.stop());

  it("exports a tool turn as invoke_agent → chat / execute_tool, under the client's span, subagent nested", async () => {
    const { res, exit } = await tracedTurn({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_SERVICE_NAME: "my-agent-app",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=tools",
    });
    expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(exit.code).toBe(0);
    const spans = await collector.waitForSpans(7);
    expect(spans.map((s) => s.name).sort()).toEqual(
      ["chat trace.json", "chat trace.json", "chat trace.json", "execute_tool read_file", "execute_tool task", "invoke_agent harness-bridge", "invoke_agent harness-bridge"].sort(),
    );
    // One trace: the client's.
    for (const s of spans) expect(s.traceId).toBe(CLIENT_TRACE);
    const [top, sub] = ["traced", "traced.task-"].map((id) => byName(spans, "invoke_agent harness-bridge").find((s) => String(s.attributes["gen_ai.conversation.id"]).startsWith(id) && (id !== "traced" || s.attributes["gen_ai.conversation.id"] === "traced"))!);
    expect(top.parentSpanId).toBe(CLIENT_SPAN);
    expect(top.kind).toBe(1); // INTERNAL
    expect(top.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "harness-bridge",
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "trace.json",
      "gen_ai.usage.input_tokens": 320,
      "gen_ai.usage.output_tokens": 40,
      "gen_ai.usage.cache_read.input_tokens": 250,
      "harness.turn.end": "completed",
    });
    const topChats = byName(spans, "chat trace.json").filter((s) => s.parentSpanId === top.spanId);
    expect(topChats).toHaveLength(2);
    const first = topChats.find((s) => s.attributes["harness.step"] === 1)!;
    expect(first.kind).toBe(3); // CLIENT
    expect(first.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "scripted",
      "gen_ai.system": "scripted",
      "gen_ai.request.model": "trace.json",
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_read.input_tokens": 100,
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "gen_ai.conversation.id": "traced",
    });
    expect(topChats.find((s) => s.attributes["harness.step"] === 2)!.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
    const read = byName(spans, "execute_tool read_file")[0];
    expect(read.parentSpanId).toBe(top.spanId);
    expect(read.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call_read", "gen_ai.tool.type": "function" });
    expect(read.attributes["error.type"]).toBeUndefined();
    const task = byName(spans, "execute_tool task")[0];
    expect(task.parentSpanId).toBe(top.spanId);
    // The subagent's turn nests under the task call that ran it, and its request under it.
    expect(sub.parentSpanId).toBe(task.spanId);
    expect(sub.attributes["harness.parent_session.id"]).toBe("traced");
    expect(byName(spans, "chat trace.json").filter((s) => s.parentSpanId === sub.spanId)).toHaveLength(1);
    // The resource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
    expect(top.resource).toMatchObject({ "service.name": "my-agent-app", "deployment.environment": "test", team: "tools" });
    // No key, and no content without the opt-in: neither the prompt, the file, nor the answers.
    const wire = JSON.stringify(collector.received);
    expect(wire).not.toContain(KEY);
    for (const text of [SECRET_TEXT, "read notes.md", "looking", "a summary", "summarize notes.md"]) expect(wire).not.toContain(text);
    for (const s of spans) for (const name of Object.keys(s.attributes)) expect(name).not.toMatch(/messages|arguments|result/);
  });

  it("records content only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and redacts the key in it", async () => {
    const { res } = await tracedTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" });
    expect(res.result.status).toBe("ok");
    const spans = await collector.waitForSpans(7);
    const top = byName(spans, "invoke_agent harness-bridge").find((s) => s.attributes["gen_ai.conversation.id"] === "traced")!;
    expect(JSON.parse(String(top.attributes["gen_ai.input.messages"]))).toEqual([{ role: "user", parts: [{ type: "text", content: "read notes.md ***" }] }]);
    const read = byName(spans, "execute_tool read_file")[0];
    expect(JSON.parse(String(read.attributes["gen_ai.tool.call.arguments"]))).toEqual({ path: "notes.md" });
    expect(String(read.attributes["gen_ai.tool.call.result"])).toContain(SECRET_TEXT);
    const chat = byName(spans, "chat trace.json").find((s) => s.parentSpanId === top.spanId && s.attributes["harness.step"] === 1)!;
    const output = JSON.parse(String(chat.attributes["gen_ai.output.messages"]));
    expect(output[0].parts).toEqual(expect.arrayContaining([{ type: "text", content: "looking" }, expect.objectContaining({ type: "tool_call", name: "read_file", id: "call_read" })]));
    expect(JSON.stringify(collector.received)).not.toContain(KEY);
  });

  it("carries each request's and the turn's cost (usage.costUsd) when the prices are known", async () => {
    const prices = { inputPerMTok: 1, cacheHitPerMTok: 0.1, outputPerMTok: 2 };
    const { res, client } = await tracedTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }, "read notes.md", { prices });
    expect(res.result.status).toBe("ok");
    const spans = await collector.waitForSpans(7);
    const events = client.events("traced");
    const stepCosts = events.filter((e) => e.type === "assistant/message").map((e) => e.data.usage.costUsd);
    const turnCost = events.find((e) => e.type === "turn/end").data.usage.costUsd;
    expect(stepCosts.every((c: unknown) => typeof c === "number" && c > 0)).toBe(true);
    const top = byName(spans, "invoke_agent harness-bridge").find((s) => s.attributes["gen_ai.conversation.id"] === "traced")!;
    expect(top.attributes["harness.usage.cost_usd"]).toBe(turnCost);
    const chats = byName(spans, "chat trace.json").filter((s) => s.parentSpanId === top.spanId);
    expect(chats.map((s) => s.attributes["harness.step"]).sort()).toEqual([1, 2]);
    for (const chat of chats) expect(chat.attributes["harness.usage.cost_usd"]).toBe(stepCosts[Number(chat.attributes["harness.step"]) - 1]);
  });

  it("has an execute_tool span for MCP and client tools too, and error.type on a failed call", async () => {
    ws.script("tools.json", {
      turns: [
        {
          steps: [
            {
              toolCalls: [
                { id: "call_mcp", name: "mcp__everything__echo", arguments: { message: "hi" } },
                { id: "call_client", name: "lookup", arguments: { word: "harness" } },
                { id: "call_missing", name: "read_file", arguments: { path: "no-such-file.md" } },
              ],
            },
            { text: "done" },
          ],
        },
      ],
    });
    const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: { word: { type: "string" } } } };
    const c = bridge({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint });
    c.request(1, "initialize", initParams(ws.dir, "tools.json", { clientTools: [lookup], mcpServers: { everything: everything() } }));
    expect((await c.response(1)).error).toBeUndefined();
    c.request(2, "session/prompt", { sessionId: "tools", contentBlocks: [{ type: "text", text: "go" }] });
    await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "tool/request", "the client tool's request");
    c.request("answer", "session/tool_result", { sessionId: "tools", callId: "call_client", content: [{ type: "text", text: "not in the dictionary" }], isError: true });
    expect((await c.response(2)).result.status).toBe("ok");
    c.request(3, "shutdown");
    await c.response(3);
    await c.exited;
    const spans = await collector.waitForSpans(6);
    const top = byName(spans, "invoke_agent harness-bridge")[0];
    // No traceparent: the turn starts a trace of its own, and its spans are in it.
    expect(top.parentSpanId).toBeUndefined();
    const tool = (name: string) => byName(spans, `execute_tool ${name}`)[0];
    for (const name of ["mcp__everything__echo", "lookup", "read_file"]) {
      expect(tool(name).parentSpanId).toBe(top.spanId);
      expect(tool(name).traceId).toBe(top.traceId);
    }
    expect(tool("mcp__everything__echo").attributes).toMatchObject({ "gen_ai.tool.name": "mcp__everything__echo", "gen_ai.tool.call.id": "call_mcp", "gen_ai.tool.type": "extension" });
    expect(tool("mcp__everything__echo").attributes["error.type"]).toBeUndefined();
    expect(tool("lookup").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_client", "error.type": "tool_error" });
    expect(tool("lookup").status?.code).toBe(2); // ERROR
    expect(tool("read_file").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_missing", "error.type": "tool_error" });
    // Content stays out of the error too (no opt-in): the client's answer is not in any span.
    expect(JSON.stringify(collector.received)).not.toContain("not in the dictionary");
  });
});

/** A local OTLP receiver that records requests; `answer: false` accepts and never answers (a hung collector). */
async function plainReceiver(answer = true) {
  const got: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ headers: req.headers, body });
      if (answer) res.writeHead(200).end("{}");
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return { url, got, close };
}

describe("the exporter, without a collector", () => {
  it("sends OTEL_EXPORTER_OTLP_HEADERS with the export (never in a span) to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given", async () => {
    const receiver = await plainReceiver();
    try {
      await tracedTurn({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/path`, OTEL_EXPORTER_OTLP_HEADERS: "x-team=blue,authorization=Bearer%20tok-1234567890" });
      expect(receiver.got.length).toBeGreaterThan(0);
      expect(receiver.got[0].headers).toMatchObject({ "x-team": "blue", authorization: "Bearer tok-1234567890", "content-type": "application/json" });
      const body = receiver.got.map((g) => g.body).join("");
      expect(body).toContain("invoke_agent harness-bridge");
      expect(body).not.toContain("tok-1234567890");
    } finally {
      await receiver.close();
    }
  });

  it("never writes the endpoint's credentials (user:password, query) or a collector's control characters to stderr; the credentials are still sent", async () => {
    // A collector that refuses every export with a body full of terminal escapes.
    const got: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        got.push(req.headers);
        res.writeHead(500).end("nope \x1b]0;pwned\x07\x1b[2J\x1b[31mred\x00");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const endpoint = `http://tracer:pa55w0rd-canary@127.0.0.1:${port}/v1/traces?api_key=qkey-canary`;
      const c = new RawClient({ args: ["--stdio", "--log-level", "info"], env: { ...process.env, DEEPSEEK_API_KEY: KEY, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint } });
      clients.push(c);
      c.request(1, "initialize", initParams(ws.dir, "trace.json"));
      expect((await c.response(1)).error).toBeUndefined();
      c.request(2, "session/prompt", { sessionId: "creds", contentBlocks: [{ type: "text", text: "read notes.md" }] });
      expect((await c.response(2)).result.status).toBe("ok");
      c.request(3, "shutdown");
      await c.response(3);
      await c.exited;
      expect(got.length).toBeGreaterThan(0);
      expect(got[0].authorization).toBe(`Basic ${Buffer.from("tracer:pa55w0rd-canary").toString("base64")}`);
      // It did log the endpoint and the failed export, without the secrets or the escapes.
      expect(c.stderr).toMatch(/tracing: exporting spans to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/);
      expect(c.stderr).toMatch(/tracing: could not export .*HTTP 500/);
      expect(c.stderr).not.toContain("pa55w0rd-canary");
      expect(c.stderr).not.toContain("qkey-canary");
      expect(c.stderr).not.toContain("tracer:");
      expect(c.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("redacts the key in a failed request's status message (a server that echoes the key in its error body)", async () => {
    const receiver = await plainReceiver();
    const fake = new FakeDeepSeek();
    const baseUrl = await fake.start();
    try {
      fake.table = { echo: [{ status: 400, body: { error: { message: `invalid request for key ${KEY}`, type: "invalid_request_error" } } }] };
      const c = bridge({
        ...fakeDeepSeekEnv(baseUrl, { HARNESS_RETRY_BASE_MS: "10" }),
        DEEPSEEK_API_KEY: KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      });
      c.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash" });
      expect((await c.response(1)).error).toBeUndefined();
      c.request(2, "session/prompt", { sessionId: "echo", contentBlocks: [{ type: "text", text: "echo" }] });
      const res = await c.response(2);
      expect(res.result.reason.kind).toBe("model-error");
      c.request(3, "shutdown");
      await c.response(3);
      await c.exited;
      const body = receiver.got.map((g) => g.body).join("");
      // The failure is in the spans (so the test would see a leak), with the key replaced.
      expect(body).toContain("invalid request for key ***");
      expect(body).not.toContain(KEY);
    } finally {
      fake.stop();
      await receiver.close();
    }
  });

  it("OTEL_BSP_* and timeouts that are fractions or past a timer's range are not taken (a batch size of 0.5 froze the bridge)", async () => {
    const receiver = await plainReceiver();
    try {
      const { res, exit } = await tracedTurn({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0.5",
        OTEL_BSP_MAX_QUEUE_SIZE: "0.5",
        // Past 2^31-1 ms Node would take 1 ms: every export would time out at once.
        OTEL_EXPORTER_OTLP_TIMEOUT: "1e10",
        OTEL_BSP_SCHEDULE_DELAY: "1e10",
      });
      expect(res.result.status).toBe("ok");
      expect(exit.code).toBe(0);
      const names = receiver.got.flatMap((g) => JSON.parse(g.body).resourceSpans[0].scopeSpans[0].spans.map((s: any) => s.name));
      expect(names).toContain("invoke_agent harness-bridge");
    } finally {
      await receiver.close();
    }
  });

  it("never hands the collector's credentials (OTLP headers, an endpoint's query) to the commands the model runs", async () => {
    // The model reads its environment with bash (or an MCP server does): the collector's token
    // would be one `env` away, then in the session log, the model's history and the spans.
    const receiver = await plainReceiver();
    try {
      ws.script("env.json", { turns: [{ steps: [{ toolCalls: [{ id: "env", name: "bash", arguments: { command: "env" } }] }, { text: "seen" }] }] });
      const c = bridge({
        OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/?api-key=qkey-canary-1234`,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces?api-key=qkey-canary-1234`,
        OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=hdr-canary-5678",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "authorization=Bearer%20hdr-canary-5678",
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: "api-key=hdr-canary-5678",
        OTEL_SERVICE_NAME: "visible-service-name",
      });
      c.request(1, "initialize", initParams(ws.dir, "env.json"));
      expect((await c.response(1)).error).toBeUndefined();
      c.request(2, "session/prompt", { sessionId: "env", contentBlocks: [{ type: "text", text: "env" }] });
      expect((await c.response(2)).result.status).toBe("ok");
      const output = JSON.stringify(c.events("env").filter((e) => e.type === "tool/result"));
      expect(output).toContain("OTEL_SERVICE_NAME=visible-service-name"); // the command did print its environment
      expect(output).not.toContain("hdr-canary-5678");
      expect(output).not.toContain("qkey-canary-1234");
      c.request(3, "shutdown");
      await c.response(3);
      await c.exited;
      // The export itself still carries them.
      expect(receiver.got[0].headers).toMatchObject({ "x-honeycomb-team": "hdr-canary-5678", authorization: "Bearer hdr-canary-5678" });
    } finally {
      await receiver.close();
    }
  });

  it("ignores a traceparent that does not parse: the turn runs, as a trace of its own", async () => {
    const receiver = await plainReceiver();
    try {
      const c = bridge({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
      c.request(1, "initialize", initParams(ws.dir, "demo"));
      await c.response(1);
      c.request(2, "session/prompt", { sessionId: "bad-parent", contentBlocks: [{ type: "text", text: "hi" }], traceparent: "00-not-a-trace-context-01" });
      expect((await c.response(2)).result.status).toBe("ok");
      c.request(3, "session/prompt", { sessionId: "bad-parent", contentBlocks: [{ type: "text", text: "hi" }], traceparent: 42 });
      expect((await c.response(3)).error).toMatchObject({ code: -32602 }); // not a string: refused like any ill-typed param
      c.request(4, "shutdown");
      await c.response(4);
      await c.exited;
      const spans = receiver.got.flatMap((g) => JSON.parse(g.body).resourceSpans[0].scopeSpans[0].spans);
      const turn = spans.find((s: any) => s.name === "invoke_agent harness-bridge");
      expect(turn.parentSpanId).toBeUndefined();
      expect(turn.traceId).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      await receiver.close();
    }
  });

  it("cuts captured content at OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", async () => {
    const receiver = await plainReceiver();
    try {
      await tracedTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true", OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: "24" });
      const spans = receiver.got.flatMap((g) => JSON.parse(g.body).resourceSpans[0].scopeSpans[0].spans);
      const content = spans.flatMap((s: any) => s.attributes).filter((a: any) => /messages|arguments|result/.test(a.key));
      expect(content.length).toBeGreaterThan(0);
      for (const a of content) expect(a.value.stringValue.length).toBeLessThanOrEqual(24);
      expect(content.find((a: any) => a.key === "gen_ai.tool.call.result").value.stringValue).toHaveLength(24);
    } finally {
      await receiver.close();
    }
  });

  it("puts compaction's summarizing request in a chat span of the turn, and its usage in the turn's", async () => {
    const receiver = await plainReceiver();
    try {
      ws.file("notes.txt", "the notes\n");
      const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 10 });
      ws.script("compact.json", {
        turns: [
          { steps: [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }], usage: usage(1_000) }, { text: "read it", usage: usage(9_000) }] },
          { steps: [{ text: "after the compaction", usage: usage(2_000) }] },
        ],
        compaction: { steps: [{ text: "SUMMARY: a long prompt, then notes.txt was read", usage: usage(5_000) }] },
      });
      const c = bridge({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
      c.request(1, "initialize", initParams(ws.dir, "compact.json", { contextWindow: 10_000 }));
      await c.response(1);
      c.request(2, "session/prompt", { sessionId: "long", contentBlocks: [{ type: "text", text: "x".repeat(20_000) }] });
      expect((await c.response(2)).result.status).toBe("ok");
      c.request(3, "session/prompt", { sessionId: "long", contentBlocks: [{ type: "text", text: "go on" }] });
      expect((await c.response(3)).result.status).toBe("ok");
      expect(c.events("long").some((e) => e.type === "context/compacted")).toBe(true);
      const turnEnd = c.events("long").filter((e) => e.type === "turn/end")[1];
      c.request(4, "shutdown");
      await c.response(4);
      await c.exited;
      const spans = receiver.got.flatMap((g) => JSON.parse(g.body).resourceSpans[0].scopeSpans[0].spans);
      const attrs = (s: any) => Object.fromEntries(s.attributes.map((a: any) => [a.key, a.value.stringValue ?? a.value.boolValue ?? Number(a.value.intValue)]));
      const second = spans.find((s: any) => s.name === "invoke_agent harness-bridge" && attrs(s)["harness.turn"] === 2);
      const chats = spans.filter((s: any) => s.name === "chat compact.json" && s.parentSpanId === second.spanId);
      expect(chats.map((s: any) => attrs(s)["harness.compaction"] ?? false).sort()).toEqual([false, true]);
      const summary = chats.find((s: any) => attrs(s)["harness.compaction"]);
      expect(attrs(summary)["gen_ai.usage.input_tokens"]).toBe(5_000);
      expect(summary.attributes.find((a: any) => a.key === "gen_ai.response.finish_reasons").value.arrayValue.values).toEqual([{ stringValue: "stop" }]);
      // The turn's usage is its turn/end's: the step's and the summary's.
      expect(attrs(second)["gen_ai.usage.input_tokens"]).toBe(turnEnd.data.usage.inputTokens);
      expect(turnEnd.data.usage.inputTokens).toBe(7_000);
    } finally {
      await receiver.close();
    }
  });

  it("exports nothing with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, though an endpoint is set", async () => {
    const receiver = await plainReceiver();
    try {
      for (const off of [{ OTEL_SDK_DISABLED: "true" }, { OTEL_TRACES_EXPORTER: "none" }]) {
        const { res, exit } = await tracedTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...off });
        expect(res.result.status).toBe("ok");
        expect(exit.code).toBe(0);
      }
      // shutdown sends what is queued before the exit: had anything been traced, it would be here.
      expect(receiver.got).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it("a collector that is down, or that never answers, neither fails the turn nor holds the exit", async () => {
    const hung = await plainReceiver(false);
    const down = await plainReceiver();
    await down.close(); // its port now refuses connections
    try {
      for (const endpoint of [down.url, hung.url]) {
        const { res, exit, client } = await tracedTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "1" });
        expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
        expect(exit.code).toBe(0);
        // Said on stderr: the refused connection, or the export the hung one never answered.
        expect(client.stderr).toMatch(endpoint === down.url ? /tracing: could not export/ : /tracing: \d+ spans may not have been exported/);
      }
      expect(hung.got.length).toBeGreaterThan(0); // it did reach the hung one
    } finally {
      await hung.close();
    }
  });
});
