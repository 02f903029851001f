/**
 * `--secrets-fd`: a provider key handed over on a pipe reaches the provider and appears in no
 * process's environment — not even `/proc/<bridge pid>/environ`, which keeps the start-up
 * environment whatever the bridge deletes later and which an unsandboxed tool can read. Every
 * bad descriptor content is a start-up error (exit 1) that quotes no value. Through the binary.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { BINARY, RawClient, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

const KEY = "sk-canary-from-the-pipe";
const deepseek = useFakeDeepSeek();
const server = deepseek.server;
let ws: TempWorkspace;
let client: RawClient | undefined;

beforeAll(() => {
  ws = tempWorkspace("hb-secrets-fd-");
});
afterAll(() => {
  ws.cleanup();
});
afterEach(async () => {
  await client?.dispose();
  client = undefined;
});

/** The fake server's environment without any key in it: the pipe is the only way in. */
function envWithoutKey(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...deepseek.env(), HB_MARKER: "environ-is-readable" };
  delete env.DEEPSEEK_API_KEY;
  delete env.OPENAI_API_KEY;
  return env;
}

// Each case on both kinds of descriptor: a socket pair, as Node's spawn makes; a pipe, as the
// SDK's os.pipe() makes, which the bridge reads at once as far as it holds bytes (secrets-fd.ts).
const KINDS = [
  ["a socket pair", false],
  ["a pipe", true],
] as const;

describe.each(KINDS)("a key on --secrets-fd (%s)", (_kind, fifo) => {
  it("reaches the provider, and no process's environment shows it", async () => {
    const call = { id: "call_env", type: "function", function: { name: "bash", arguments: "" } };
    client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "3"], env: envWithoutKey(), fd3: { write: JSON.stringify({ DEEPSEEK_API_KEY: KEY }), fifo } });
    const command = `cat /proc/${client.child.pid}/environ | tr '\\0' '\\n' | grep -e HB_MARKER -e DEEPSEEK_API_KEY`;
    call.function.arguments = JSON.stringify({ command });
    server.table["show me the environment"] = [
      { events: [{ delta: { role: "assistant", content: "", tool_calls: [{ index: 0, ...call }] } }, { delta: {}, finish_reason: "tool_calls" }] },
      { events: [{ delta: { role: "assistant", content: "done" } }, { delta: {}, finish_reason: "stop" }] },
    ];
    client.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat", permissionMode: "full" });
    expect((await client.response(1)).error).toBeUndefined();
    const sessionId = "s1";
    client.request(3, "session/prompt", promptParams(sessionId, "show me the environment"));
    expect((await client.response(3)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(server.authorizations.slice(-2)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`]);
    const result = client.events(sessionId).find((e) => e.type === "tool/result");
    const output = JSON.stringify(result?.data);
    expect(output).toContain("HB_MARKER=environ-is-readable");
    expect(output).not.toContain(KEY);
    expect(JSON.stringify(client.frames)).not.toContain(KEY);
    expect(await client.finalStderr()).not.toContain(KEY);
  });

  it("overrides a key in the environment", async () => {
    server.table["which key?"] = [{ events: [{ delta: { role: "assistant", content: "this one" } }, { delta: {}, finish_reason: "stop" }] }];
    client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "3"], env: { ...envWithoutKey(), DEEPSEEK_API_KEY: "sk-from-env" }, fd3: { write: JSON.stringify({ DEEPSEEK_API_KEY: KEY }), fifo } });
    client.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat" });
    const sessionId = "s1";
    client.request(3, "session/prompt", promptParams(sessionId, "which key?"));
    expect((await client.response(3)).result.status).toBe("ok");
    expect(server.authorizations.at(-1)).toBe(`Bearer ${KEY}`);
  });

  it("is read whole when its writer closes only later: what was there at the start, then the rest", async () => {
    server.table["in two parts?"] = [{ events: [{ delta: { role: "assistant", content: "yes" } }, { delta: {}, finish_reason: "stop" }] }];
    const text = JSON.stringify({ DEEPSEEK_API_KEY: KEY });
    const half = text.length >> 1;
    client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "3"], env: envWithoutKey(), fd3: { write: text.slice(0, half), later: text.slice(half), laterMs: 300, fifo } });
    client.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat" });
    expect((await client.response(1)).error).toBeUndefined();
    client.request(3, "session/prompt", promptParams("s1", "in two parts?"));
    expect((await client.response(3)).result.status).toBe("ok");
    expect(server.authorizations.at(-1)).toBe(`Bearer ${KEY}`);
  });
});

describe.each(KINDS)("a bad --secrets-fd (%s)", (_kind, fifo) => {
  const cases: Array<[string, { write: string; close?: boolean }, RegExp]> = [
    ["not JSON (its text never quoted)", { write: `{"DEEPSEEK_API_KEY": ${KEY}` }, /not a JSON object/],
    ["an array", { write: `["${KEY}"]` }, /not a JSON object/],
    ["a key pasted as a name", { write: JSON.stringify({ [KEY]: "x" }) }, /unknown name a name that is not a variable name/],
    ["a misspelt name", { write: JSON.stringify({ DEEPSEEK_APIKEY: KEY }) }, /unknown name DEEPSEEK_APIKEY \(accepted: DEEPSEEK_API_KEY, OPENAI_API_KEY\)/],
    ["a value that is not a string", { write: JSON.stringify({ DEEPSEEK_API_KEY: [KEY] }) }, /the value of DEEPSEEK_API_KEY is not a string/],
    ["more than 64 KiB", { write: `{"DEEPSEEK_API_KEY": "${KEY}${"x".repeat(70_000)}"}` }, /more than 65536 bytes/],
    ["a writer that never closes", { write: JSON.stringify({ DEEPSEEK_API_KEY: KEY }), close: false }, /no end of file within 5000 ms/],
  ];
  for (const [name, fd3, message] of cases) {
    it(`is a start-up error, exit 1, no value quoted: ${name}`, async () => {
      client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "3"], env: envWithoutKey(), fd3: { ...fd3, fifo } });
      const exit = await Promise.race([client.exited, new Promise((r) => setTimeout(() => r("still running"), 15_000))]);
      expect(exit).toEqual({ code: 1, signal: null });
      expect(client.stderr).toMatch(message);
      expect(client.stderr).not.toContain(KEY);
      expect(client.frames).toEqual([]);
    }, 20_000);
  }

  it("a descriptor that is not open is a start-up error", async () => {
    client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "200"], env: envWithoutKey() });
    expect(await client.exited).toEqual({ code: 1, signal: null });
    expect(client.stderr).toMatch(/--secrets-fd 200: not an open descriptor/);
  });

  it("a descriptor that is neither a pipe nor a file (one of Node's own) is refused unread", async () => {
    client = new RawClient({ args: ["--stdio", "--no-session-log", "--secrets-fd", "9"], env: envWithoutKey() });
    expect(await client.exited).toEqual({ code: 1, signal: null });
    expect(client.stderr).toMatch(/--secrets-fd 9: (not a pipe or a file|not an open descriptor)/);
  });

  it.each([
    ["small", 10],
    ["over 64 KiB", 70_000],
  ])("a descriptor open for writing only (%s) is 'not readable', not a size or parse error", (_what, size) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-secrets-wo-"));
    const file = path.join(dir, "keys.json");
    fs.writeFileSync(file, "x".repeat(size));
    const writeOnly = fs.openSync(file, fs.constants.O_WRONLY);
    try {
      const run = spawnSync(BINARY, ["--stdio", "--no-session-log", "--secrets-fd", "3"], { stdio: ["pipe", "pipe", "pipe", writeOnly], input: "", env: envWithoutKey(), timeout: 15_000 });
      expect(run.status).toBe(1);
      expect(run.stderr.toString()).toMatch(/--secrets-fd 3: not readable/);
    } finally {
      fs.closeSync(writeOnly);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stdio descriptors are a usage error (exit 2)", async () => {
    client = new RawClient({ args: ["--stdio", "--secrets-fd", "0"], env: envWithoutKey() });
    expect(await client.exited).toEqual({ code: 2, signal: null });
    expect(client.stderr).toMatch(/must be a descriptor number >= 3/);
  });
});
