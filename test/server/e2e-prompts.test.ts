/**
 * End to end against the built binary (bin/harness-bridge, built by test/support/build-once.ts):
 * initialize and prompts, status mapping, cancel, overlap, concurrent sessions, errors of the
 * request handlers, max-steps, the missing-turn-end invariant and resuming from the log.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { BINARY, RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-e2e-");
  ws.file("README.md", "# A workspace\nline two\nline three\nline four\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

function start(options: ConstructorParameters<typeof RawClient>[0] = {}): RawClient {
  const client = new RawClient(options);
  clients.push(client);
  return client;
}

/** Every stdout line parses and is a JSON-RPC 2.0 frame. */
function expectCleanStdout(client: RawClient): void {
  expect(client.badLines).toEqual([]);
  for (const frame of client.frames) expect(frame.jsonrpc).toBe("2.0");
}

async function initialized(model = "demo", extra: object = {}, options: ConstructorParameters<typeof RawClient>[0] = {}): Promise<RawClient> {
  const c = start(options);
  c.request("init", "initialize", initParams(ws.dir, model, extra));
  const res = await c.response("init");
  expect(res.error).toBeUndefined();
  return c;
}

function lastIndex(frames: Frame[], match: (f: Frame) => boolean): number {
  for (let i = frames.length - 1; i >= 0; i--) if (match(frames[i])) return i;
  return -1;
}

const hangScript = oneTurn({ text: "working on it", chunkSize: 4, hang: true });

describe("initialize and a prompt", () => {
  it("streams every notification of the turn before the {status, reason} response", async () => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir));
    const init = await c.response(1);
    expect(init.result).toMatchObject({ serverInfo: { name: "harness-bridge" }, protocolVersion: 1 });
    expect(typeof init.result.serverInfo.version).toBe("string");
    expect(init.result.providers).toEqual(expect.arrayContaining(["scripted", "deepseek", "openai"]));

    c.request(2, "session/prompt", promptParams("demo-1", "show me"));
    const res = await c.response(2);
    expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(Object.keys(res.result).sort()).toEqual(["reason", "status"]);

    const events = c.events("demo-1");
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("user/message");
    expect(types).toContain("assistant/chunk");
    expect(types).toContain("tool/result");
    expect(types[types.length - 1]).toBe("turn/end");
    const lastEvent = lastIndex(c.frames, (f) => f.method === "session.event");
    expect(lastEvent).toBeLessThan(c.indexOf(res));
    for (let i = 1; i < events.length; i++) expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
    for (const e of events) expect(typeof e.time).toBe("number");
    // The demo's read_file really read the workspace's README.
    const result = events.find((e) => e.type === "tool/result");
    expect(result.data.isError).toBe(false);
    expect(JSON.stringify(result.data.content)).toContain("A workspace");
    expectCleanStdout(c);
  });

  it("serves initialize and a prompt pipelined in one write", async () => {
    const c = start();
    c.send(
      RawClient.request(1, "initialize", initParams(ws.dir)),
      RawClient.request(2, "session/prompt", promptParams("p")),
      RawClient.request(3, "session/cancel", { sessionId: "nobody" }),
    );
    expect((await c.response(1)).result.protocolVersion).toBe(1);
    expect((await c.response(2)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect((await c.response(3)).result).toEqual({ cancelled: false });
  });

  it("runs pipelined initializes in order: a failed one does not block the next, a good one refuses the next", async () => {
    const c = start();
    c.send(
      RawClient.request(1, "initialize", { cwd: `${ws.dir}/missing`, provider: "scripted", model: "demo" }),
      RawClient.request(2, "initialize", initParams(ws.dir)),
      RawClient.request(3, "initialize", initParams(ws.dir)),
      RawClient.request(4, "session/prompt", promptParams("after")),
    );
    expect((await c.response(1)).error).toMatchObject({ code: -32602 });
    expect((await c.response(2)).result.protocolVersion).toBe(1);
    expect((await c.response(3)).error).toMatchObject({ code: -32002, data: { kind: "already-initialized" } });
    expect((await c.response(4)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
  });

  it("a second initialize sent while the first runs waits for it, and takes over when it fails", async () => {
    const c = start();
    // `tools` makes the first initialize load the agent modules before it fails, so the second arrives while it runs.
    c.send(
      RawClient.request(1, "initialize", { cwd: ws.dir, provider: "scripted", model: "demo", tools: ["no_such_tool"] }),
      RawClient.request(2, "initialize", initParams(ws.dir)),
    );
    expect((await c.response(1)).error).toMatchObject({ code: -32602 });
    expect((await c.response(2)).result.protocolVersion).toBe(1);
  });

  it("maps a model error to status error", async () => {
    const script = ws.script("err.json", oneTurn({ text: "partial", error: { message: "upstream is down", httpStatus: 502, code: "http" } }));
    const c = await initialized(script);
    c.request(2, "session/prompt", promptParams("e"));
    const res = await c.response(2);
    expect(res.result).toEqual({ status: "error", reason: { kind: "model-error", message: "upstream is down", httpStatus: 502, code: "http" } });
  });

  it("maps maxSteps to {status: error, reason: {kind: max-steps, limit}}", async () => {
    const script = ws.script("tools.json", oneTurn({ toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] }, { text: "done" }));
    const c = await initialized(script, { maxSteps: 1 });
    c.request(2, "session/prompt", promptParams("m"));
    expect((await c.response(2)).result).toEqual({ status: "error", reason: { kind: "max-steps", limit: 1 } });
  });
});

describe("cancel and overlap", () => {
  it("cancel during a hang: the prompt answers aborted before the cancel answers {cancelled: true}", async () => {
    const c = await initialized(ws.script("hang.json", hangScript));
    c.request("p", "session/prompt", promptParams("h"));
    await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "assistant/chunk", "a chunk");
    c.request("c", "session/cancel", { sessionId: "h" });
    const cancel = await c.response("c");
    const prompt = await c.response("p");
    expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect(cancel.result).toEqual({ cancelled: true });
    expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(cancel));
    // The turn/end of the aborted turn came before both.
    const end = c.frames.findIndex((f) => f.method === "session.event" && f.params.event.type === "turn/end");
    expect(end).toBeGreaterThan(-1);
    expect(end).toBeLessThan(c.indexOf(prompt));
    // The session is reusable: the script's only turn hangs again, and cancels again.
    c.request("p2", "session/prompt", promptParams("h"));
    await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "turn/start" && f.params.event.data.turn === 2, "turn 2");
    c.request("c2", "session/cancel", { sessionId: "h" });
    expect((await c.response("c2")).result).toEqual({ cancelled: true });
    expect((await c.response("p2")).result.status).toBe("aborted");
  });

  it("a cancel pipelined right behind its prompt (one write) aborts it", async () => {
    const c = start();
    c.send(
      RawClient.request(1, "initialize", initParams(ws.dir, ws.script("hang.json", hangScript))),
      RawClient.request("p", "session/prompt", promptParams("quick")),
      RawClient.request("c", "session/cancel", { sessionId: "quick" }),
    );
    const cancel = await c.response("c");
    const prompt = await c.response("p");
    expect(cancel.result).toEqual({ cancelled: true });
    expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(cancel));
  });

  it("cancel with nothing in flight → false, and no session is created", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      const c = await initialized("demo", {}, { args: ["--stdio", "--session-root", root] });
      c.request(1, "session/cancel", { sessionId: "ghost" });
      expect((await c.response(1)).result).toEqual({ cancelled: false });
      c.request(2, "session/prompt", promptParams("real"));
      await c.response(2);
      c.request(3, "session/cancel", { sessionId: "real" });
      expect((await c.response(3)).result).toEqual({ cancelled: false });
      const files = fs.readdirSync(root, { recursive: true }).map(String);
      expect(files.some((f) => f.endsWith("real.jsonl"))).toBe(true);
      expect(files.some((f) => f.includes("ghost"))).toBe(false);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("a second prompt for a busy session fails at once with -32001 while the first runs", async () => {
    const c = await initialized(ws.script("hang.json", hangScript));
    c.request("first", "session/prompt", promptParams("b"));
    await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "turn/start", "turn/start");
    c.request("second", "session/prompt", promptParams("b"));
    const busy = await c.response("second");
    expect(busy.error).toMatchObject({ code: -32001, data: { kind: "session-busy" } });
    expect(c.frames.find((f) => f.id === "first")).toBeUndefined();
    // Another session is not blocked by it.
    c.request("other-cancel", "session/cancel", { sessionId: "other" });
    expect((await c.response("other-cancel")).result).toEqual({ cancelled: false });
    c.request("c", "session/cancel", { sessionId: "b" });
    expect((await c.response("c")).result).toEqual({ cancelled: true });
    expect((await c.response("first")).result.status).toBe("aborted");
  });

  it("two sessions run concurrently: their events interleave and both settle", async () => {
    const script = ws.script("slow.json", oneTurn({ text: "abcdefghijklmnopqrstuvwxyz0123456789", chunkSize: 2, delayMs: 15 }));
    const c = await initialized(script);
    c.send(RawClient.request("a", "session/prompt", promptParams("A")), RawClient.request("b", "session/prompt", promptParams("B")));
    const [ra, rb] = await Promise.all([c.response("a"), c.response("b")]);
    expect(ra.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(rb.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const sessionsInOrder = c.frames.filter((f) => f.method === "session.event").map((f) => f.params.sessionId as string);
    const firstB = sessionsInOrder.indexOf("B");
    const lastA = sessionsInOrder.lastIndexOf("A");
    expect(firstB).toBeLessThan(lastA); // B started before A finished: they ran side by side
    for (const [id, res] of [["A", ra], ["B", rb]] as const) {
      const idx = lastIndex(c.frames, (f) => f.method === "session.event" && f.params.sessionId === id);
      expect(idx).toBeLessThan(c.indexOf(res));
      const seqs = c.events(id).map((e) => e.seq);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);
    }
  });
});

describe("built-in tools through the binary", () => {
  const toolResults = (c: RawClient, id: string) =>
    c.events(id).filter((e) => e.type === "tool/result").map((e) => ({ name: e.data.name, isError: e.data.isError, text: e.data.content.map((b: { text: string }) => b.text).join("") }));

  it("write_file, edit_file, read_file, glob, grep and bash work on the workspace, in the model's order", async () => {
    const script = ws.script(
      "tools.json",
      oneTurn(
        { toolCalls: [{ name: "write_file", arguments: { path: "src/app.txt", content: "alpha\nbeta\n" } }] },
        { toolCalls: [{ name: "edit_file", arguments: { path: "src/app.txt", oldText: "beta", newText: "gamma" } }] },
        {
          toolCalls: [
            { name: "read_file", arguments: { path: "src/app.txt" } },
            { name: "glob", arguments: { pattern: "**/*.txt" } },
            { name: "grep", arguments: { pattern: "gam+a" } },
            { name: "bash", arguments: { command: "wc -l < src/app.txt; echo \"secret=${DEEPSEEK_API_KEY:-none}\"; exit 3" } },
          ],
        },
        { text: "done" },
      ),
    );
    const c = await initialized(script, {}, { env: { ...process.env, DEEPSEEK_API_KEY: "sk-must-not-leak" } });
    c.request("p", "session/prompt", promptParams("tools"));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(fs.readFileSync(path.join(ws.dir, "src/app.txt"), "utf8")).toBe("alpha\ngamma\n");
    const results = toolResults(c, "tools");
    expect(results.map((r) => r.name)).toEqual(["write_file", "edit_file", "read_file", "glob", "grep", "bash"]);
    // A command that ran is not a tool error, whatever its exit code: the model reads the code.
    expect(results.every((r) => !r.isError)).toBe(true);
    expect(results[2].text).toMatch(/1\s+alpha[\s\S]*2\s+gamma/);
    expect(results[3].text).toContain("src/app.txt");
    expect(results[4].text).toContain("src/app.txt:2:gamma");
    expect(results[5].text).toBe("2\nsecret=none\n[exit code 3]");
  });

  it("read-only mode does not offer bash, write_file or edit_file: calling one is an error result and the turn goes on", async () => {
    const script = ws.script(
      "ro.json",
      oneTurn({ toolCalls: [{ name: "bash", arguments: { command: "touch pwned" } }, { name: "write_file", arguments: { path: "x", content: "x" } }] }, { text: "ok" }),
    );
    const c = await initialized(script, { permissionMode: "read-only" });
    c.request("p", "session/prompt", promptParams("ro"));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const results = toolResults(c, "ro");
    expect(results).toHaveLength(2);
    for (const r of results) {
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/unknown tool .*offered are: read_file, glob, grep, task$/);
    }
    expect(fs.existsSync(path.join(ws.dir, "pwned"))).toBe(false);
  });

  it("the tools allow-list narrows what is offered; unknown names are refused at initialize", async () => {
    const script = ws.script("allow.json", oneTurn({ toolCalls: [{ name: "bash", arguments: { command: "true" } }] }, { text: "ok" }));
    const c = await initialized(script, { tools: ["read_file", "grep"] });
    c.request("p", "session/prompt", promptParams("allow"));
    await c.response("p");
    expect(toolResults(c, "allow")[0].text).toMatch(/offered are: read_file, grep$/);
    const other = start();
    other.request("bad", "initialize", initParams(ws.dir, script, { tools: ["rm_rf"] }));
    const bad = await other.response("bad");
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toMatch(/unknown tool 'rm_rf' \(built-in: bash, read_file, write_file, edit_file, glob, grep, task\)/);
  });
});

describe("subagents", () => {
  it("every subagent notification comes before the parent's prompt response", async () => {
    const script = ws.script("sub.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "read the README", description: "reader" } }] }, { text: "The subagent says hi." }] }],
      subagent: { turns: [{ steps: [{ text: "Child answer." }] }] },
    });
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("parent"));
    const res = await c.response("p");
    expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const started = c.frames.find((f) => f.method === "subagent.started");
    const finished = c.frames.find((f) => f.method === "subagent.finished");
    expect(started?.params.parentSessionId).toBe("parent");
    const child = started?.params.childSessionId as string;
    expect(finished?.params).toMatchObject({
      parentSessionId: "parent",
      childSessionId: child,
      agentId: child,
      provider: "scripted",
      status: "ok",
      stopReason: { kind: "completed" },
      lastAssistantMessage: [{ type: "text", text: "Child answer." }],
    });
    const childEvents = c.frames.filter((f) => f.method === "session.event" && f.params.sessionId === child);
    expect(childEvents.length).toBeGreaterThan(0);
    for (const f of [started!, finished!, ...childEvents]) expect(c.indexOf(f)).toBeLessThan(c.indexOf(res));
    expect(c.indexOf(started!)).toBeLessThan(c.indexOf(childEvents[0]));
    expect(c.indexOf(childEvents.at(-1)!)).toBeLessThan(c.indexOf(finished!));
    const result = c.events("parent").find((e) => e.type === "tool/result");
    expect(result.data).toMatchObject({ name: "task", isError: false, content: [{ type: "text", text: "Child answer." }] });
  });

  it("cancel during a hanging subagent aborts parent and child; the prompt answers aborted first", async () => {
    const script = ws.script("subhang.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "wait forever" } }] }, { text: "never" }] }],
      subagent: { turns: [{ steps: [{ text: "waiting", hang: true }] }] },
    });
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("parent2"));
    await c.waitFrame((f) => f.method === "session.event" && f.params.sessionId !== "parent2" && f.params.event.type === "assistant/chunk", "a child chunk");
    c.request("c", "session/cancel", { sessionId: "parent2" });
    const cancel = await c.response("c");
    const prompt = await c.response("p");
    expect(cancel.result).toEqual({ cancelled: true });
    expect(prompt.result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect(c.indexOf(prompt)).toBeLessThan(c.indexOf(cancel));
    const finished = c.frames.find((f) => f.method === "subagent.finished");
    expect(finished?.params).toMatchObject({ status: "aborted", stopReason: { kind: "aborted" } });
    expect(c.indexOf(finished!)).toBeLessThan(c.indexOf(prompt));
  });
  it("a prompt for a running subagent's child session is refused -32001 like any busy session", async () => {
    const script = ws.script("subbusy.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "wait forever" } }] }, { text: "never" }] }],
      subagent: { turns: [{ steps: [{ text: "waiting", hang: true }] }] },
    });
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("parent3"));
    const started = await c.waitFrame((f) => f.method === "subagent.started", "subagent.started");
    const childId = started.params.childSessionId;
    c.request("child", "session/prompt", promptParams(childId));
    const refused = await c.response("child");
    expect(refused.error).toMatchObject({ code: -32001, data: { kind: "session-busy", sessionId: childId } });
    c.request("c", "session/cancel", { sessionId: "parent3" });
    expect((await c.response("p")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    await c.response("c");
    // Once its subagent turn has ended the child session takes prompts again.
    c.request("again", "session/prompt", promptParams(childId));
    c.request("c2", "session/cancel", { sessionId: childId });
    expect((await c.response("again")).error).toBeUndefined();
  });
});

describe("subagent failures and depth", () => {
  it("a failing child ends error; the parent's tool result says why and the parent's turn goes on", async () => {
    const script = ws.script("subfail.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "try", description: "flaky" } }] }, { text: "The helper failed; I will do it myself." }] }],
      subagent: { turns: [{ steps: [{ text: "Starting", error: { message: "upstream is down", httpStatus: 503, code: "http" } }] }] },
    });
    const c = await initialized(script);
    c.request("p", "session/prompt", promptParams("pf"));
    const res = await c.response("p");
    expect(res.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const finished = c.frames.find((f) => f.method === "subagent.finished");
    expect(finished?.params).toMatchObject({
      status: "error",
      stopReason: { kind: "model-error", message: "upstream is down", httpStatus: 503 },
      lastAssistantMessage: [{ type: "text", text: "Starting" }],
    });
    expect(c.indexOf(finished!)).toBeLessThan(c.indexOf(res));
    const result = c.events("pf").find((e) => e.type === "tool/result");
    expect(result.data).toMatchObject({
      name: "task",
      isError: true,
      content: [{ type: "text", text: "subagent 'flaky' failed (model-error: upstream is down); its last message: Starting" }],
    });
  });

  it("children get no task tool at the default depth 1; --subagent-depth 2 allows a grandchild", async () => {
    const script = ws.script("nest.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "delegate further" } }] }, { text: "parent done" }] }],
      subagent: { turns: [{ steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "deeper" } }] }, { text: "child done" }] }] },
    });
    const childResults = (c: RawClient) =>
      c.frames
        .filter((f) => f.method === "session.event" && f.params.sessionId.includes(".task-") && f.params.event.type === "tool/result")
        .map((f) => f.params.event.data);

    const flat = await initialized(script);
    flat.request("p", "session/prompt", promptParams("nest"));
    expect((await flat.response("p")).result.status).toBe("ok");
    expect(flat.frames.filter((f) => f.method === "subagent.started")).toHaveLength(1);
    expect(childResults(flat)[0]).toMatchObject({ name: "task", isError: true, content: [{ text: expect.stringMatching(/unknown tool 'task'/) }] });

    const deep = await initialized(script, {}, { args: ["--stdio", "--no-session-log", "--subagent-depth", "2"] });
    deep.request("p", "session/prompt", promptParams("nest2"));
    expect((await deep.response("p")).result.status).toBe("ok");
    const started = deep.frames.filter((f) => f.method === "subagent.started").map((f) => f.params);
    expect(started).toHaveLength(2);
    expect(started[1].parentSessionId).toBe(started[0].childSessionId);
    expect(childResults(deep).some((r) => r.name === "task" && !r.isError)).toBe(true);
  });
});

describe("request errors", () => {
  it("-32002 for session/* before initialize and for a second initialize", async () => {
    const c = start();
    c.request(1, "session/prompt", promptParams("x"));
    c.request(2, "session/cancel", { sessionId: "x" });
    expect((await c.response(1)).error).toMatchObject({ code: -32002 });
    expect((await c.response(2)).error).toMatchObject({ code: -32002 });
    c.request(3, "initialize", initParams(ws.dir));
    expect((await c.response(3)).result).toBeDefined();
    c.request(4, "initialize", initParams(ws.dir));
    expect((await c.response(4)).error).toMatchObject({ code: -32002 });
  });

  it("a failed initialize may be retried", async () => {
    const c = start();
    c.request(1, "initialize", initParams(ws.dir, "no-such-script.json"));
    expect((await c.response(1)).error).toBeDefined();
    c.request(2, "initialize", initParams(ws.dir));
    expect((await c.response(2)).result.protocolVersion).toBe(1);
  });

  it("an unknown provider → -32602 listing the registered providers", async () => {
    const c = start();
    c.request(1, "initialize", { cwd: ws.dir, provider: "skynet", model: "x" });
    const { error } = await c.response(1);
    expect(error?.code).toBe(-32602);
    expect(error?.message).toContain("skynet");
    for (const p of ["scripted", "deepseek", "openai"]) expect(error?.message).toContain(p);
    expect(error?.data?.providers).toEqual(expect.arrayContaining(["scripted", "deepseek"]));
  });

  it("deepseek without DEEPSEEK_API_KEY → -32004 naming the variable, at initialize", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hb-home-"));
    try {
      const c = start({ env: { PATH: "/usr/bin:/bin", HOME: home } });
      c.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat" });
      const { error } = await c.response(1);
      expect(error?.code).toBe(-32004);
      expect(error?.message).toContain("DEEPSEEK_API_KEY");
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it("invalid params name the field", async () => {
    const c = await initialized();
    c.request(1, "session/prompt", { contentBlocks: [{ type: "text", text: "x" }] });
    c.request(2, "session/prompt", { sessionId: "s", contentBlocks: [] });
    c.request(3, "session/cancel", {});
    c.request(4, "session/prompt", { sessionId: "s", contentBlocks: [{ type: "image", url: "x" }] });
    const r1 = await c.response(1);
    expect(r1.error).toMatchObject({ code: -32602 });
    expect(r1.error?.message).toContain("params.sessionId");
    const r2 = await c.response(2);
    expect(r2.error).toMatchObject({ code: -32602 });
    expect(r2.error?.message).toContain("params.contentBlocks");
    expect((await c.response(3)).error?.message).toContain("params.sessionId");
    expect((await c.response(4)).error).toMatchObject({ code: -32602 });
  });

  it("initialize params are validated too (the field is named)", async () => {
    const c = start();
    // One at a time: an initialize sent while another is still running is refused (-32002).
    c.request(1, "initialize", { provider: "scripted", model: "demo" });
    expect((await c.response(1)).error?.message).toContain("params.cwd");
    c.request(2, "initialize", { cwd: ws.dir, provider: "scripted", model: "demo", protocolVersion: 2 });
    expect((await c.response(2)).error).toMatchObject({ code: -32602 });
    c.request(3, "initialize", { cwd: ws.dir, provider: "scripted", model: "demo", maxSteps: 0 });
    expect((await c.response(3)).error?.message).toContain("params.maxSteps");
  });

  it.each(["..", ".", "a/b", "../etc", "", "x".repeat(129), "a b", "a\\b"])("sessionId %j → -32602", async (sessionId) => {
    const c = await initialized();
    c.request(1, "session/prompt", { sessionId, contentBlocks: [{ type: "text", text: "x" }] });
    const { error } = await c.response(1);
    expect(error).toMatchObject({ code: -32602 });
    expect(error?.message).toContain("params.sessionId");
  });

  it("an unknown method → -32601", async () => {
    const c = await initialized();
    c.request(1, "session/frobnicate", { sessionId: "x" });
    expect((await c.response(1)).error).toMatchObject({ code: -32601 });
  });

  it("framing errors come back from the binary too, and it keeps serving", async () => {
    const c = start();
    await c.sendRaw('not json\n[1,2]\n{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}\n');
    await c.sendRaw(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize", params: initParams(ws.dir) })}\n`);
    expect((await c.response(2)).result.protocolVersion).toBe(1);
    const errors = await c.nullIdErrors(2);
    expect(errors.map((f) => f.error?.code).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([-32700, -32600]);
    expect((await c.response(1)).error?.code).toBe(-32602);
  });
});

describe("long frames", () => {
  it("a message of megabytes, and its megabyte chunks, arrive whole and in order before the response; the log holds the same", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      // Long enough for the sliced path (64 Ki units); a surrogate pair and escapes to cut through.
      const text = 'line "one" é😀\tend\n'.repeat(150_000);
      const script = ws.script("long.json", turns([{ text, chunkSize: 1_000_000 }]));
      const c = await initialized(script, {}, { args: ["--stdio", "--session-root", root] });
      // Another session's prompt in the same write: its frames interleave, each frame stays whole.
      c.send(RawClient.request(2, "session/prompt", promptParams("long")), RawClient.request(3, "session/prompt", promptParams("other")));
      expect((await c.response(2)).result.status).toBe("ok");
      expect((await c.response(3)).result.status).toBe("ok");
      expectCleanStdout(c);
      const events = c.events("long");
      const chunks = events.filter((e) => e.type === "assistant/chunk");
      expect(chunks.length).toBe(Math.ceil(text.length / 1_000_000));
      expect(chunks.map((e) => e.data.chunk.text).join("")).toBe(text);
      const message = events.find((e) => e.type === "assistant/message");
      expect(message.data.content).toEqual([{ type: "text", text }]);
      for (let i = 1; i < events.length; i++) expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
      expect(c.indexOf(c.frames.find((f) => f.params?.event === message)!)).toBeLessThan(c.indexOf(await c.response(2)));
      const file = fs.readdirSync(root, { recursive: true }).map(String).find((f) => f.endsWith("long.jsonl"))!;
      const logged = fs.readFileSync(path.join(root, file), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      expect(logged).toContainEqual(message);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("the missing turn/end invariant", () => {
  it("a session log that cannot be appended mid-turn → -32603 (missing-turn-end); nothing unlogged was announced", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      // RLIMIT_FSIZE of 1 KiB: the log (a regular file) hits it mid-turn; stdout (a pipe) does not.
      const script = ws.script("big.json", oneTurn({ text: "0123456789abcdef".repeat(40), chunkSize: 64 }, { text: "never" }));
      const c = start({
        command: "bash",
        args: ["-c", `trap '' XFSZ; ulimit -f 1; exec "$0" "$@"`, BINARY, "--stdio", "--session-root", root],
      });
      c.request(1, "initialize", initParams(ws.dir, script));
      await c.response(1);
      c.request(2, "session/prompt", promptParams("full"));
      const res = await c.response(2);
      expect(res.error).toMatchObject({ code: -32603, data: { kind: "missing-turn-end" } });
      expect(res.error?.message).toMatch(/idle without turn\/end/);
      expect(c.events("full").some((e) => e.type === "turn/end")).toBe(false);
      // Every durable event announced is whole in the log (appended before it was announced).
      const file = fs.readdirSync(root, { recursive: true }).map(String).find((f) => f.endsWith("full.jsonl"))!;
      const text = fs.readFileSync(path.join(root, file), "utf8");
      // The failed append was cut back: the log holds whole lines only, so it stays loadable.
      expect(text.endsWith("\n")).toBe(true);
      const logged = text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .slice(1);
      const announced = c.events("full").filter((e) => e.type !== "assistant/chunk");
      expect(announced.length).toBeGreaterThan(0);
      for (const e of announced) expect(logged).toContainEqual(e);
      // The server survives it.
      c.request(3, "session/cancel", { sessionId: "full" });
      expect((await c.response(3)).result).toEqual({ cancelled: false });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("durable sessions across processes", () => {
  it("a corrupt session log → -32603 naming the file; other sessions still work", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      const dir = path.join(root, workspaceFolderName(ws.dir));
      fs.mkdirSync(dir, { recursive: true });
      const header = { type: "session-header", version: 1, sessionId: "broken", workspace: ws.dir, createdAt: 1, provider: "scripted", model: "demo" };
      fs.writeFileSync(path.join(dir, "broken.jsonl"), `${JSON.stringify(header)}\n{oops\n{"type":"turn/start","seq":2,"time":1,"data":{"turn":1}}\n`);
      const c = await initialized("demo", {}, { args: ["--stdio", "--session-root", root] });
      c.request(1, "session/prompt", promptParams("broken"));
      const { error } = await c.response(1);
      expect(error?.code).toBe(-32603);
      expect(error?.message).toContain("broken.jsonl");
      expect(error?.message).toMatch(/corrupt/);
      c.request(2, "session/prompt", promptParams("fine"));
      expect((await c.response(2)).result.status).toBe("ok");
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("a log whose header line is corrupt but has events after it is refused, never written afresh over its history", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      const dir = path.join(root, workspaceFolderName(ws.dir));
      fs.mkdirSync(dir, { recursive: true });
      const events = `{"type":"user/message","seq":1,"time":1,"data":{"content":[{"type":"text","text":"precious"}]}}\n{"type":"turn/start","seq":2,"time":1,"data":{"turn":1}}\n`;
      fs.writeFileSync(path.join(dir, "hurt.jsonl"), `{"type":"session-head@@\n${events}`);
      // A header torn by a kill (the only line, whole or not): the session starts afresh, as before.
      fs.writeFileSync(path.join(dir, "torn.jsonl"), `{"type":"session-head`);
      fs.writeFileSync(path.join(dir, "torn2.jsonl"), `{"type":"session-head@@\n`);
      const c = await initialized("demo", {}, { args: ["--stdio", "--session-root", root] });
      c.request(1, "session/prompt", promptParams("hurt"));
      const { error } = await c.response(1);
      expect(error?.code).toBe(-32603);
      expect(error?.message).toContain("hurt.jsonl");
      expect(error?.message).toMatch(/corrupt at line 1/);
      expect(fs.readFileSync(path.join(dir, "hurt.jsonl"), "utf8")).toBe(`{"type":"session-head@@\n${events}`);
      for (const [id, n] of [["torn", 2], ["torn2", 3]] as const) {
        c.request(n, "session/prompt", promptParams(id));
        expect((await c.response(n)).result.status).toBe("ok");
        expect(fs.readFileSync(path.join(dir, `${id}.jsonl`), "utf8").split("\n")[0]).toContain('"type":"session-header"');
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("a second process resumes the session: turn numbers and seq continue", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-root-"));
    try {
      const script = ws.script("two.json", turns([{ text: "first answer" }], [{ text: "second answer" }]));
      const args = ["--stdio", "--session-root", root];
      const one = await initialized(script, {}, { args });
      one.request(2, "session/prompt", promptParams("keep", "first"));
      await one.response(2);
      const lastSeq = one.events("keep").at(-1).seq;
      one.end();
      expect((await one.exit()).code).toBe(0);

      const two = await initialized(script, {}, { args });
      two.request(2, "session/prompt", promptParams("keep", "second"));
      expect((await two.response(2)).result.status).toBe("ok");
      const events = two.events("keep");
      expect(events[0].seq).toBe(lastSeq + 1);
      expect(events.find((e) => e.type === "turn/start").data.turn).toBe(2);
      const msg = events.find((e) => e.type === "assistant/message");
      expect(msg.data.content).toEqual([{ type: "text", text: "second answer" }]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
