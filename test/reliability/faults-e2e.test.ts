/**
 * Fault injection end to end, through the built binary (what test/server/e2e-deepseek-faults
 * and test/tools/bash.test.ts do not already cover):
 *
 * - the model server answers 429: with `Retry-After` the retry waits what the server asked (not
 *   the backoff), and a 429 that outlasts the retries ends the turn `model-error`
 *   (`rate-limit`, 429) while the bridge keeps serving;
 * - bash tools misbehave inside a real turn: one that hangs with children ignoring SIGTERM is
 *   killed by `session/cancel`, one that outlives its `timeoutMs` is killed with all its
 *   children and the turn goes on, one that prints a gigabyte leaves a capped result and a
 *   bounded bridge;
 * - the bridge is SIGKILLed mid-turn: no tool process outlives it, the durable log holds
 *   exactly the durable events that were announced, and a new bridge resumes the session from
 *   it — a torn last line tolerated — with `seq` strictly increasing and nothing duplicated.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { DONE, FakeOpenAIServer, chunk, errorBody, frame, jsonReply, sseReply } from "../support/fake-openai-server.js";
import { RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { killLeftovers, marker, peakRss, pidsWith, stubbornCommand, waitFor } from "./support/procs.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
const marks: string[] = [];
const roots: string[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-rel-faults-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const m of marks.splice(0)) killLeftovers(m);
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
  ws.cleanup();
});

function start(options: ConstructorParameters<typeof RawClient>[0] = {}): RawClient {
  const c = new RawClient(options);
  clients.push(c);
  return c;
}

function newMarker(): string {
  const m = marker();
  marks.push(m);
  return m;
}

function sessionRoot(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-rel-root-"));
  roots.push(root);
  return root;
}

const isEvent = (sessionId: string, type: string) => (f: Frame) => f.method === "session.event" && f.params.sessionId === sessionId && f.params.event.type === type;

async function scripted(script: object, options: ConstructorParameters<typeof RawClient>[0] = {}, extra: object = {}): Promise<RawClient> {
  const c = start(options);
  c.request("init", "initialize", initParams(ws.dir, ws.script("script.json", script as never), extra));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

function logLines(root: string, sessionId: string): string[] {
  const file = path.join(root, workspaceFolderName(ws.dir), `${sessionId}.jsonl`);
  return fs.readFileSync(file, "utf8").split("\n");
}

// ---------------------------------------------------------------------------
// The model server
// ---------------------------------------------------------------------------

describe("the model server answers 429", () => {
  let server: FakeOpenAIServer;
  beforeEach(async () => {
    server = await FakeOpenAIServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  const reply = (text: string) => sseReply([frame(chunk({ role: "assistant", content: text })), frame(chunk({}, "stop")), DONE]);

  async function deepseek(retries: number): Promise<RawClient> {
    const c = start({
      args: ["--stdio", "--no-session-log"],
      env: fakeDeepSeekEnv(server.url, {
        HARNESS_MAX_RETRIES: String(retries),
        // A retry that ignored Retry-After would wait 30-60 s: far beyond these tests' timeouts.
        HARNESS_RETRY_BASE_MS: "60000",
        HARNESS_RETRY_MAX_MS: "60000",
      }),
    });
    c.request("init", "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash" });
    expect((await c.response("init")).error).toBeUndefined();
    return c;
  }

  it("with Retry-After: 0 it is retried at once (not after the backoff) and the turn completes", async () => {
    const c = await deepseek(2);
    server.enqueue(jsonReply(429, errorBody("Rate limit reached for requests", "rate_limit"), { "retry-after": "0" }), reply("after the wait"));
    c.request("p", "session/prompt", promptParams("rl", "go"));
    expect((await c.response("p", 15_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(server.requests).toHaveLength(2);
    await c.stderrMatching(/HTTP 429: Rate limit reached for requests; retry 1 of 2 in 0 ms/);
    const message = c.events("rl").find((e) => e.type === "assistant/message");
    expect(message.data.content).toEqual([{ type: "text", text: "after the wait" }]);
  });

  it("a 429 that outlasts the retries → model-error (rate-limit, 429); the next prompt on the session works", async () => {
    const c = await deepseek(1);
    const limited = () => jsonReply(429, errorBody("Rate limit reached for requests", "rate_limit"), { "retry-after": "0" });
    server.enqueue(limited(), limited());
    c.request("p1", "session/prompt", promptParams("rl2", "first"));
    const first = await c.response("p1", 15_000);
    expect(first.result).toEqual({
      status: "error",
      reason: { kind: "model-error", httpStatus: 429, code: "rate-limit", message: expect.stringMatching(/HTTP 429.*Rate limit reached.*gave up after 1 retry/) },
    });
    expect(server.requests).toHaveLength(2);
    server.enqueue(reply("back again"));
    c.request("p2", "session/prompt", promptParams("rl2", "second"));
    expect((await c.response("p2", 15_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(c.badLines).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Bash tools that misbehave
// ---------------------------------------------------------------------------

describe("bash tools that misbehave, inside a turn", () => {
  it("a hanging command whose children ignore SIGTERM: cancel answers aborted and every process is gone", async () => {
    const m = newMarker();
    const c = await scripted(turns([{ text: "running it", toolCalls: [{ id: "hang", name: "bash", arguments: { command: stubbornCommand(m) } }] }, { text: "unreachable" }]));
    c.request("p", "session/prompt", promptParams("hang"));
    expect(await waitFor(() => pidsWith(`${m}-stubborn`).length > 0 && pidsWith(`${m}-plain`).length > 0, 10_000)).toBe(true);
    c.request("x", "session/cancel", { sessionId: "hang" });
    const cancel = await c.response("x", 15_000);
    const prompt = await c.response("p");
    expect(cancel.result).toEqual({ cancelled: true });
    expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(cancel));
    const result = c.events("hang").find((e) => e.type === "tool/result");
    expect(result.data).toMatchObject({ callId: "hang", isError: true });
    expect(result.data.content[0].text).toMatch(/aborted/);
    // SIGTERM first, SIGKILL after the grace period: the stubborn one goes too.
    expect(await waitFor(() => pidsWith(m).length === 0, 10_000)).toBe(true);
  });

  it("a command past its timeoutMs is killed with its SIGTERM-ignoring children, and the turn goes on (full mode)", async () => {
    const m = newMarker();
    const c = await scripted(
      turns([{ toolCalls: [{ id: "slow", name: "bash", arguments: { command: stubbornCommand(m), timeoutMs: 1000 } }] }, { text: "the command timed out" }]),
      {},
      { permissionMode: "full" },
    );
    c.request("p", "session/prompt", promptParams("timeout"));
    expect((await c.response("p", 20_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const result = c.events("timeout").find((e) => e.type === "tool/result");
    expect(result.data).toMatchObject({ callId: "slow", isError: true });
    expect(result.data.content[0].text).toMatch(/timed out after 1 s: the command and every process it started were killed/);
    expect(await waitFor(() => pidsWith(m).length === 0, 10_000)).toBe(true);
  });

  it("a command that prints a gigabyte: the result is capped, the bridge's memory stays bounded, the turn completes", async () => {
    const GIB = 1024 * 1024 * 1024;
    const c = await scripted(turns([{ toolCalls: [{ id: "big", name: "bash", arguments: { command: `yes 0123456789abcdef | head -c ${GIB}` } }] }, { text: "that was a lot" }]));
    const before = peakRss(c.child.pid!);
    c.request("p", "session/prompt", promptParams("big"));
    expect((await c.response("p", 60_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const result = c.events("big").find((e) => e.type === "tool/result");
    const text: string = result.data.content[0].text;
    expect(result.data.isError).toBe(false);
    expect(text.length).toBeLessThan(70 * 1024);
    expect(text).toContain(`of ${GIB} bytes`);
    expect(text).toMatch(/\[exit code 0\]$/);
    // Peak RSS: what the bridge needed at start plus far less than the output it read.
    const peak = peakRss(c.child.pid!);
    expect(peak - before).toBeLessThan(256 * 1024 * 1024);
  }, 90_000);
});

// ---------------------------------------------------------------------------
// The bridge is SIGKILLed mid-turn
// ---------------------------------------------------------------------------

describe("the bridge is SIGKILLed mid-turn", () => {
  it("no tool process outlives it; the log holds exactly what was announced; a new bridge resumes past a torn last line", async () => {
    const m = newMarker();
    const root = sessionRoot();
    const script = turns(
      [{ reasoning: "Run it.", text: "Starting the job.", toolCalls: [{ id: "job", name: "bash", arguments: { command: stubbornCommand(m) } }] }, { text: "never reached" }],
      [{ text: "Resumed after the crash." }],
    );
    const args = ["--stdio", "--session-root", root];
    const one = await scripted(script, { args });
    one.request("p", "session/prompt", promptParams("crash", "first"));
    expect(await waitFor(() => pidsWith(`${m}-stubborn`).length > 0 && pidsWith(`${m}-plain`).length > 0, 10_000)).toBe(true);
    await one.waitFrame(isEvent("crash", "assistant/message"), "the tool-call message");
    one.kill("SIGKILL");
    expect(await one.exited).toEqual({ code: null, signal: "SIGKILL" });

    // Nothing the tool started survives the bridge (lifeline watcher / bubblewrap's namespace).
    expect(await waitFor(() => pidsWith(m).length === 0, 10_000)).toBe(true);

    // The log: a header, then exactly the durable events that were announced, in order.
    const announced = one.events("crash").filter((e) => e.type !== "assistant/chunk");
    const lines = logLines(root, "crash");
    expect(lines.at(-1)).toBe(""); // ends with a whole line
    const logged = lines.slice(1, -1).map((l) => JSON.parse(l));
    expect(JSON.parse(lines[0]).type).toBe("session-header");
    expect(logged).toEqual(announced);
    expect(logged.map((e) => e.type)).toEqual(["user/message", "turn/start", "step/start", "assistant/message"]);
    const lastSeq = one.events("crash").at(-1).seq;

    // A kill in the middle of an append leaves a torn last line.
    const file = path.join(root, workspaceFolderName(ws.dir), "crash.jsonl");
    fs.appendFileSync(file, '{"type":"tool/result","seq":99,"time":1,"data":{"callId":"jo');

    const two = await scripted(script, { args });
    two.request("p", "session/prompt", promptParams("crash", "second"));
    expect((await two.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const resumed = two.events("crash");
    // The bash call the kill left without a result gets a durable error result first (docs/PROTOCOL.md "Client tools and approvals").
    const interruptedCall = logged[3].data.content.find((b: any) => b.type === "tool-call");
    expect(resumed[0]).toMatchObject({ type: "tool/result", seq: lastSeq + 1, data: { callId: interruptedCall.id, isError: true } });
    expect(resumed[1]).toMatchObject({ type: "user/message", seq: lastSeq + 2 });
    for (let i = 1; i < resumed.length; i++) expect(resumed[i].seq).toBeGreaterThan(resumed[i - 1].seq);
    expect(resumed.find((e) => e.type === "turn/start").data.turn).toBe(2);
    expect(resumed.find((e) => e.type === "assistant/message").data.content).toEqual([{ type: "text", text: "Resumed after the crash." }]);
    two.request("bye", "shutdown");
    await two.response("bye");
    expect((await two.exit()).code).toBe(0);

    // The torn line is gone; the old events are there once, then the new ones, seq strictly increasing.
    const after = logLines(root, "crash");
    expect(after.at(-1)).toBe("");
    const events = after.slice(1, -1).map((l) => JSON.parse(l));
    expect(events.slice(0, logged.length)).toEqual(logged);
    expect(events.slice(logged.length)).toEqual(resumed.filter((e) => e.type !== "assistant/chunk"));
    for (let i = 1; i < events.length; i++) expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
  });
});
