/**
 * The bridge's provider key never shows in what it writes, however it comes back: a server
 * that echoes it in an error body, a model that repeats it, a command (in `full` mode, with the
 * key passed in the environment) that prints the bridge's start-up environment. Checked in
 * every notification, every response, stderr at debug level and every session log file; each
 * occurrence is `***`. The OpenTelemetry exporter's credentials (header values, an endpoint's
 * password and query) are the bridge's secrets too. Through the binary.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RawClient, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

const KEY = "sk-canary-9f8e7d6c5b4a";
const deepseek = useFakeDeepSeek();
const server = deepseek.server;
let ws: TempWorkspace;
let root = "";
let client: RawClient | undefined;

beforeAll(() => {
  ws = tempWorkspace("hb-redact-");
  root = fs.mkdtempSync(path.join(ws.dir, "..", "hb-redact-root-"));
});
afterAll(() => {
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});
afterEach(async () => {
  await client?.dispose();
  client = undefined;
});

const say = (text: string) => [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }];

/** Every byte of every file under `dir`. */
function allFiles(dir: string): string {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => fs.readFileSync(path.join(e.parentPath, e.name), "utf8")).join("\n");
}

async function started(extraEnv: NodeJS.ProcessEnv = {}): Promise<RawClient> {
  client = new RawClient({
    args: ["--stdio", "--session-root", root, "--log-level", "debug"],
    env: { ...deepseek.env({ HARNESS_MAX_RETRIES: "0" }), DEEPSEEK_API_KEY: KEY, ...extraEnv },
  });
  client.request("init", "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat", permissionMode: "full" });
  expect((await client.response("init")).error).toBeUndefined();
  return client;
}

async function expectNowhere(c: RawClient): Promise<void> {
  expect(await c.finalStderr()).not.toContain(KEY); // all of it: the bridge has exited
  expect(JSON.stringify(c.frames)).not.toContain(KEY);
  expect(allFiles(root)).not.toContain(KEY);
}

describe("the provider key", () => {
  it("echoed in a server's error body: the turn's reason, the log line and the session log show ***", async () => {
    server.table["echo my key"] = [{ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}`, type: "authentication_error" } } }];
    const c = await started();
    c.request(1, "session/prompt", promptParams("echo-error", "echo my key"));
    const answer = await c.response(1);
    expect(answer.result.status).toBe("error");
    expect(answer.result.reason.message).toContain("Incorrect API key provided: ***");
    expect(c.events("echo-error").find((e) => e.type === "turn/end").data.reason.message).toContain("***");
    await expectNowhere(c);
  });

  it("repeated by the model: the message, the history sent back and the session log show ***", async () => {
    server.table["what is the key?"] = [{ events: say(`The key is ${KEY}.`) }];
    server.table["and again?"] = [{ events: say("I said it before.") }];
    const c = await started();
    c.request(1, "session/prompt", promptParams("echo-text", "what is the key?"));
    expect((await c.response(1)).result.status).toBe("ok");
    const message = c.events("echo-text").find((e) => e.type === "assistant/message");
    expect(JSON.stringify(message.data.content)).toContain("The key is ***.");
    c.request(2, "session/prompt", promptParams("echo-text", "and again?"));
    expect((await c.response(2)).result.status).toBe("ok");
    expect(server.problems).toEqual([]);
    await expectNowhere(c);
  });

  it("printed by a command from the bridge's start-up environment (full mode): the tool result shows ***", async () => {
    const c = await started();
    const command = `tr '\\0' '\\n' < /proc/${c.child.pid}/environ | grep DEEPSEEK_API_KEY`;
    const call = { id: "call_env", type: "function", function: { name: "bash", arguments: JSON.stringify({ command }) } };
    server.table["print the environment"] = [
      { events: [{ delta: { role: "assistant", content: "", tool_calls: [{ index: 0, ...call }] } }, { delta: {}, finish_reason: "tool_calls" }] },
      { events: say("done") },
    ];
    c.request(1, "session/prompt", promptParams("echo-tool", "print the environment"));
    expect((await c.response(1)).result.status).toBe("ok");
    const result = c.events("echo-tool").find((e) => e.type === "tool/result");
    expect(JSON.stringify(result.data.content)).toContain("DEEPSEEK_API_KEY=***");
    await expectNowhere(c);
  });
});

describe("the OpenTelemetry exporter's credentials", () => {
  const TOKEN = "otlp-token-canary-51c2";
  const PASSWORD = "otlp-pass-canary-77ab";
  const QUERY = "otlp-query-canary-9d0e";

  it("printed by a command from the bridge's start-up environment (full mode): header values, the endpoint's password and query show ***", async () => {
    // A port nothing listens on: the export fails, the turn does not.
    const c = await started({
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${TOKEN},x-team=${QUERY}-team`,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://user:${PASSWORD}@127.0.0.1:9/v1/traces?api_key=${QUERY}`,
    });
    const command = `tr '\\0' '\\n' < /proc/${c.child.pid}/environ | grep OTEL_`;
    const call = { id: "call_otel", type: "function", function: { name: "bash", arguments: JSON.stringify({ command }) } };
    server.table["print the exporter settings"] = [
      { events: [{ delta: { role: "assistant", content: "", tool_calls: [{ index: 0, ...call }] } }, { delta: {}, finish_reason: "tool_calls" }] },
      { events: say("done") },
    ];
    c.request(1, "session/prompt", promptParams("echo-otel", "print the exporter settings"));
    expect((await c.response(1)).result.status).toBe("ok");
    const output = JSON.stringify(c.events("echo-otel").find((e) => e.type === "tool/result").data.content);
    expect(output).toContain("OTEL_EXPORTER_OTLP_HEADERS=authorization=***");
    expect(output).toContain("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=");
    const everything = `${JSON.stringify(c.frames)}\n${await c.finalStderr()}\n${allFiles(root)}\n${JSON.stringify(server.requests)}`;
    for (const secret of [TOKEN, PASSWORD, QUERY]) expect(everything).not.toContain(secret);
  });
});
