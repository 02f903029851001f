/**
 * End to end against the built binary: frames and tool calls nested far deeper than anything
 * recursive could take, and string params the OS can never use.
 * Each answer is specific and the process keeps serving.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/json-depth.js";
import { ErrorCode } from "../../src/protocol/errors.js";
import { FakeDeepSeek, fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-hostile-");
  ws.file("README.md", "# hello\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

function start(): RawClient {
  const client = new RawClient();
  clients.push(client);
  return client;
}

const DEEP = 5_000;
const deepArray = (n = DEEP) => `${"[".repeat(n)}${"]".repeat(n)}`;
const deepObject = (n = DEEP) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

describe("deeply nested frames", () => {
  it("ignores a notification with a deep array method and a response with a deep array id, and keeps serving", async () => {
    const c = start();
    c.send(`{"jsonrpc":"2.0","method":${deepArray()}}`, `{"jsonrpc":"2.0","id":${deepArray()},"result":1}`, `{"jsonrpc":"2.0","id":${deepObject()},"error":{}}`);
    c.request(1, "initialize", initParams(ws.dir));
    expect((await c.response(1)).result.protocolVersion).toBe(1);
    c.request(2, "session/prompt", promptParams("deep"));
    expect((await c.response(2)).result.status).toBe("ok");
    expect(await c.finalStderr()).not.toContain("Maximum call stack");
  });

  it("answers a deep request with -32600 naming the limit, its id kept", async () => {
    const c = start();
    c.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"cwd":${deepArray()}}}`);
    const res = await c.response(7);
    expect(res.error?.code).toBe(ErrorCode.InvalidRequest);
    expect(res.error?.message).toContain(`${MAX_JSON_DEPTH} levels`);
    c.send(`{"jsonrpc":"2.0","id":8,"method":${deepObject()}}`);
    expect((await c.response(8)).error?.code).toBe(ErrorCode.InvalidRequest);
    c.request(9, "initialize", initParams(ws.dir));
    expect((await c.response(9)).result.protocolVersion).toBe(1);
  });

  it("the debug log of an ignored deep frame does not recurse either", async () => {
    const client = new RawClient({ args: ["--stdio", "--no-session-log", "--log-level", "debug"] });
    clients.push(client);
    client.send(`{"jsonrpc":"2.0","method":${deepArray()}}`);
    client.request(1, "initialize", initParams(ws.dir));
    expect((await client.response(1)).result.protocolVersion).toBe(1);
    await client.stderrMatching("ignored a notification-shaped frame (method an array)");
  });
});

describe("deeply nested tool-call arguments from the model", () => {
  for (const sessionLog of [false, true]) {
    it(`end as an error tool result, the turn goes on and the session stays usable (session log ${sessionLog ? "on" : "off"})`, async () => {
      const deepArgs = `{"path":${deepArray()}}`;
      const script = ws.script("deep.json", {
        turns: [{ steps: [{ toolCalls: [{ id: "c1", name: "read_file", rawArguments: deepArgs }] }, { text: "recovered" }] }, { steps: [{ text: "second turn" }] }],
      });
      const client = new RawClient({ args: sessionLog ? ["--stdio", "--session-root", `${ws.dir}/.sessions`] : ["--stdio", "--no-session-log"] });
      clients.push(client);
      client.request(1, "initialize", initParams(ws.dir, script));
      expect((await client.response(1)).result).toBeDefined();
      client.request(2, "session/prompt", promptParams("s"));
      expect((await client.response(2)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
      const result = client.events("s").find((e) => e.type === "tool/result");
      expect(result?.data?.isError).toBe(true);
      expect(JSON.stringify(result)).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
      client.request(3, "session/prompt", promptParams("s"));
      expect((await client.response(3)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    });
  }
});

describe("deeply nested tool-call arguments from a DeepSeek-format server", () => {
  it("end as an error tool result; the next request carries them as the string the model sent", async () => {
    const server = new FakeDeepSeek();
    const url = await server.start();
    try {
      const deepArgs = `{"path":${deepArray()}}`;
      const text = (content: string) => ({ events: [{ delta: { content } }, { delta: {}, finish_reason: "stop" }] });
      server.table = {
        deep: [
          { events: [{ delta: { tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "read_file", arguments: deepArgs } }] } }, { delta: {}, finish_reason: "tool_calls" }] },
          text("recovered"),
        ],
        again: [text("fine")],
      };
      const client = new RawClient({ env: fakeDeepSeekEnv(url) });
      clients.push(client);
      client.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash" });
      expect((await client.response(1)).result).toBeDefined();
      client.request(2, "session/prompt", promptParams("ds", "deep"));
      expect((await client.response(2)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
      const result = client.events("ds").find((e) => e.type === "tool/result");
      expect(result?.data?.isError).toBe(true);
      expect(JSON.stringify(result)).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
      client.request(3, "session/prompt", promptParams("ds", "again"));
      expect((await client.response(3)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
      expect(server.problems).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});

describe("string params the OS can never use", () => {
  it("initialize with a NUL byte or an absurdly long cwd is -32602 naming params.cwd", async () => {
    const c = start();
    c.request(1, "initialize", initParams(`${ws.dir}/a\u0000b`));
    c.request(2, "initialize", initParams(`${ws.dir}/${"x".repeat(5000)}`));
    c.request(3, "initialize", initParams("/" + "abc/".repeat(1200)));
    for (const id of [1, 2, 3]) {
      const res = await c.response(id);
      expect(res.error?.code).toBe(ErrorCode.InvalidParams);
      expect(res.error?.message).toContain("params.cwd");
    }
    c.request(4, "initialize", { cwd: ws.dir, provider: "scripted\u0000", model: "demo" });
    c.request(5, "initialize", { cwd: ws.dir, provider: "scripted", model: "m".repeat(5000) });
    c.request(6, "initialize", { cwd: ws.dir, provider: "scripted", model: "demo", tools: ["read_file\u0000"] });
    for (const [id, field] of [[4, "params.provider"], [5, "params.model"], [6, "params.tools.0"]] as const) {
      const res = await c.response(id);
      expect(res.error?.code).toBe(ErrorCode.InvalidParams);
      expect(res.error?.message).toContain(field);
    }
    c.request(7, "initialize", initParams(ws.dir));
    expect((await c.response(7)).result.protocolVersion).toBe(1);
  });

  it("initialize with a lone surrogate in cwd is -32602, not the folder of U+FFFD beside it", async () => {
    // The folder the OS would be handed instead (U+FFFD for the surrogate) exists: before, the
    // bridge worked there without a word.
    fs.mkdirSync(path.join(ws.dir, "caf\uFFFD"));
    const c = start();
    c.request(1, "initialize", initParams(path.join(ws.dir, "caf\udce9")));
    c.request(2, "initialize", { ...initParams(ws.dir), mcpServers: { s: { command: "/bin/caf\udce9" } } });
    for (const [id, field] of [[1, "params.cwd"], [2, "params.mcpServers.s.command"]] as const) {
      const res = await c.response(id);
      expect(res.error?.code).toBe(ErrorCode.InvalidParams);
      expect(res.error?.message).toContain(field);
      expect(res.error?.message).toContain("lone surrogate");
    }
    // An MCP server's argument or variable: it would get U+FFFD in place of the surrogate.
    c.request(4, "initialize", { ...initParams(ws.dir), mcpServers: { s: { command: "/bin/cat", args: ["/srv/\udce9"] } } });
    c.request(5, "initialize", { ...initParams(ws.dir), mcpServers: { s: { command: "/bin/cat", env: { V: "/srv/\udce9" } } } });
    for (const [id, field] of [[4, "params.mcpServers.s.args.0"], [5, "params.mcpServers.s.env"]] as const) {
      const res = await c.response(id);
      expect(res.error?.code).toBe(ErrorCode.InvalidParams);
      expect(res.error?.message).toContain(field);
      expect(res.error?.message).toContain("lone surrogate");
    }
    c.request(3, "initialize", initParams(path.join(ws.dir, "caf\uFFFD")));
    expect((await c.response(3)).result.protocolVersion).toBe(1);
  });

  it("initialize with a cwd that leads to a folder whose path is not valid UTF-8 is -32602", async () => {
    const raw = Buffer.concat([Buffer.from(`${ws.dir}/caf`), Buffer.from([0xe9])]);
    fs.mkdirSync(raw);
    fs.mkdirSync(path.join(ws.dir, "caf\uFFFD")); // the folder the bridge would have worked in
    fs.symlinkSync(raw, path.join(ws.dir, "link"));
    const c = start();
    c.request(1, "initialize", initParams(path.join(ws.dir, "link")));
    const res = await c.response(1);
    expect(res.error?.code).toBe(ErrorCode.InvalidParams);
    expect(res.error?.message).toMatch(/params\.cwd: .*link leads to a folder whose path is not valid UTF-8/);
  });
});
