/**
 * Compaction end to end, over the raw wire against the built binary: a scripted session whose
 * reported usage grows past `compactAt × contextWindow` compacts (`context/compacted`), keeps
 * going, and resumes after a restart from the compacted history (replayed from the log's last
 * compaction on); `session/compact` on demand (idle, unknown, busy → -32001).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { replayOffset } from "../../src/agent/store/resume.js";
import { lockLetGo } from "../support/session-locks.js";
import { lockPathOf } from "../../src/agent/store/log-format.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-compact-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-compact-log-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  fs.rmSync(root, { recursive: true, force: true });
  ws.cleanup();
});

async function started(script: string, extra: object = {}): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--session-root", root] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script, { contextWindow: 10_000, ...extra }));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

const typed = (c: RawClient, sessionId: string, type: string) => c.events(sessionId).filter((e) => e.type === type);
const logOf = () => fs.readdirSync(root).flatMap((d) => fs.readdirSync(path.join(root, d)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(root, d, f)))[0];
const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 10 });

const SCRIPT = {
  turns: [
    { steps: [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }], usage: usage(1_000) }, { text: "read it", usage: usage(9_000) }] },
    { steps: [{ text: "second turn, after the compaction", usage: usage(2_000) }] },
    // No usage: the scripted model reports a quarter of the history's characters.
    { steps: [{ text: "third turn, after the restart" }] },
  ],
  compaction: { steps: [{ text: "SUMMARY: the user sent a long prompt of x and asked to read notes.txt" }] },
};

describe("automatic compaction", () => {
  it("a session whose usage passes compactAt compacts before the next request, keeps going, and resumes from the compacted history", async () => {
    ws.file("notes.txt", "the notes\n");
    const script = ws.script("s.json", SCRIPT);
    const a = await started(script);
    a.request("p1", "session/prompt", promptParams("s", "x".repeat(20_000)));
    expect((await a.response("p1")).result.status).toBe("ok");
    expect(typed(a, "s", "context/compacted")).toHaveLength(0);

    a.request("p2", "session/prompt", promptParams("s", "go on"));
    expect((await a.response("p2")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const [compacted] = typed(a, "s", "context/compacted");
    expect(compacted.data).toMatchObject({ summary: SCRIPT.compaction.steps[0].text, trigger: "auto", turn: 2 });
    expect(compacted.data.tokensBefore).toBeGreaterThan(8_000);
    expect(compacted.data.tokensAfter).toBeLessThan(compacted.data.tokensBefore);
    // Kept from the first assistant message on: the long user message is what was summarized.
    const firstAssistant = a.events("s").find((e) => e.type === "assistant/message");
    expect(compacted.data.keptFromSeq).toBe(firstAssistant.seq);
    // Between turn/start and the step it came before.
    const types = a.events("s").filter((e) => e.seq > typed(a, "s", "turn/start")[1].seq).map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(["context/compacted", "step/start", "assistant/chunk"]);
    expect(typed(a, "s", "assistant/message").at(-1).data.content).toEqual([{ type: "text", text: "second turn, after the compaction" }]);
    a.request("bye", "shutdown");
    await a.response("bye");

    // The log is replayed from the kept history on: the long first prompt is not read.
    const bytes = fs.readFileSync(logOf());
    const headerEnd = bytes.indexOf(10) + 1;
    const fd = fs.openSync(logOf(), "r");
    const from = replayOffset(fd, bytes.length, headerEnd);
    fs.closeSync(fd);
    expect(from - headerEnd).toBeGreaterThan(20_000);
    expect(bytes.subarray(from).toString()).not.toContain("x".repeat(100));

    const b = await started(script);
    b.request("p3", "session/prompt", promptParams("s", "and now"));
    expect((await b.response("p3")).result.status).toBe("ok");
    expect(typed(b, "s", "turn/start")[0].data.turn).toBe(3);
    const message = typed(b, "s", "assistant/message")[0].data;
    expect(message.content).toEqual([{ type: "text", text: "third turn, after the restart" }]);
    // A quarter of the history's characters: the summary and the kept messages, not the 20 000 x's.
    expect(message.usage.inputTokens).toBeLessThan(500);
    expect(typed(b, "s", "context/compacted")).toHaveLength(0);
    // The listing still knows the session's first prompt (its title) and every turn, though the
    // resume never loaded the events before the kept history.
    b.request("l", "session/list", {});
    const [entry] = (await b.response("l")).result.sessions;
    expect(entry).toMatchObject({ sessionId: "s", turns: 3 });
    expect(entry.title).toMatch(/^x{10}/);
  });
});

/** A first prompt longer than the summary that replaces it (a shorter one is not worth compacting). */
const LONG_HELLO = `hello; my notes: ${"the build is green. ".repeat(20)}`;

describe("a summary that saves nothing", () => {
  it("is not recorded, and does not stop the turn from compacting once the history has grown", async () => {
    ws.file("big.txt", `${"a line of a big file ".repeat(150)}\n`);
    const reads = Array.from({ length: 6 }, (_, i) => ({ toolCalls: [{ id: `r${i}`, name: "read_file", arguments: { path: "big.txt" } }] }));
    const script = ws.script("s.json", { turns: [{ steps: [...reads, { text: "read it six times" }] }], compaction: { steps: [{ text: "SUMMARY: the user asked to read big.txt, which was read." }] } });
    const c = await started(script, { contextWindow: 1_024, compactAt: 0.5 });
    // At the second step only "go" is older than the kept history: its summary is longer, so none is
    // recorded; later steps have more to summarize.
    c.request("p", "session/prompt", promptParams("s", "go"));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const compactions = typed(c, "s", "context/compacted");
    expect(compactions.length).toBeGreaterThan(0);
    for (const e of compactions) expect(e.data.tokensAfter).toBeLessThan(e.data.tokensBefore);
  });
});

describe("cutting old tool outputs", () => {
  it("is all a step needs when the stubs bring the estimate under the limit: no summary, a smaller prompt, whole outputs in the log", async () => {
    const files = [1, 2, 3, 4, 5, 6, 7, 8];
    for (const n of files) ws.file(`f${n}.txt`, `${`line ${n} of a long file `.repeat(40)}\n`.repeat(5));
    const reads = files.map((n) => ({ id: `r${n}`, name: "read_file", arguments: { path: `f${n}.txt` } }));
    // No scripted usage: the scripted model reports a quarter of the history's characters as sent.
    const script = ws.script("s.json", { turns: [{ steps: [{ toolCalls: reads }, { text: "read them all" }] }] });
    const c = await started(script, { contextWindow: 6_000 });
    c.request("p1", "session/prompt", promptParams("s", "read the eight files"));
    expect((await c.response("p1")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(typed(c, "s", "context/compacted")).toHaveLength(0);
    const outputs = typed(c, "s", "tool/result").map((e) => e.data.content[0].text.length);
    expect(outputs).toHaveLength(8);
    const whole = Math.ceil(outputs.reduce((a: number, b: number) => a + b, 0) / 4);
    // With every output whole the second request would pass 0.8 x 6 000; five stubs bring it under.
    expect(whole).toBeGreaterThan(4_800);
    const sent = typed(c, "s", "assistant/message").at(-1).data.usage.inputTokens;
    expect(sent).toBeLessThan(4_800);
    expect(sent).toBeLessThan(whole - 4_000);
    // The log keeps every output whole.
    const results = fs.readFileSync(logOf(), "utf8").split("\n").filter((l) => l.includes('"type":"tool/result"'));
    expect(results).toHaveLength(8);
    for (const line of results) expect(line).not.toContain("cut by compaction");
  });
});

describe("session/compact", () => {
  const script = { turns: [{ steps: [{ text: "done" }] }, { steps: [{ text: "slow", delayMs: 50, repeat: 400 }] }], compaction: { steps: [{ text: "SUMMARY: said done" }] } };

  it("compacts an idle session on demand, then has nothing left to compact; an unknown session is false and not created", async () => {
    const c = await started(ws.script("s.json", script));
    c.request("p", "session/prompt", promptParams("s", LONG_HELLO));
    await c.response("p");
    c.request("c1", "session/compact", { sessionId: "s" });
    expect((await c.response("c1")).result).toEqual({ compacted: true });
    expect(typed(c, "s", "context/compacted")[0].data).toMatchObject({ summary: "SUMMARY: said done", trigger: "request", turn: 1 });
    c.request("c2", "session/compact", { sessionId: "s" });
    expect((await c.response("c2")).result).toEqual({ compacted: false });
    c.request("c3", "session/compact", { sessionId: "nobody" });
    expect((await c.response("c3")).result).toEqual({ compacted: false });
    // Only s's log (its meta is written when the log is closed) beside the bridge's owner file (store/lock.ts): nothing for "nobody", no lock left behind (once its linger is over).
    await lockLetGo(lockPathOf(logOf()));
    expect(fs.readdirSync(path.dirname(logOf())).filter((name) => !name.startsWith("@owner-"))).toEqual(["s.jsonl"]);
    c.request("bad", "session/compact", { sessionId: "../x" });
    expect((await c.response("bad")).error?.code).toBe(-32602);
  });

  it("a summary no shorter than the history it would replace is not recorded", async () => {
    const c = await started(ws.script("s.json", script));
    c.request("p", "session/prompt", promptParams("s", "hi"));
    await c.response("p");
    c.request("c", "session/compact", { sessionId: "s" });
    expect((await c.response("c")).result).toEqual({ compacted: false });
    expect(typed(c, "s", "context/compacted")).toHaveLength(0);
  });

  it("a compaction whose log line was torn (no final newline) is dropped on resume, and the whole history replayed", async () => {
    const torn = { turns: [{ steps: [{ text: "noted" }] }, { steps: [{ text: "done" }] }, { steps: [{ text: "after the restart" }] }], compaction: { steps: [{ text: "SUMMARY: a long text" }] } };
    const a = await started(ws.script("s.json", torn));
    a.request("p1", "session/prompt", promptParams("s", `first: ${"x".repeat(20_000)}`));
    await a.response("p1");
    a.request("p2", "session/prompt", promptParams("s", "second"));
    await a.response("p2");
    a.request("c", "session/compact", { sessionId: "s" });
    expect((await a.response("c")).result).toEqual({ compacted: true });
    a.request("bye", "shutdown");
    await a.response("bye");
    // The compaction is the log's last line: cut its newline off, as a crash mid-write can.
    const bytes = fs.readFileSync(logOf());
    expect(bytes.toString("utf8").trimEnd().split("\n").at(-1)).toContain('"type":"context/compacted"');
    fs.writeFileSync(logOf(), bytes.subarray(0, bytes.length - 1));
    const b = await started(ws.script("s.json", torn));
    b.request("p3", "session/prompt", promptParams("s", "and now"));
    expect((await b.response("p3")).result.status).toBe("ok");
    // No scripted usage: a quarter of the history's characters. The first prompt is back in it.
    expect(typed(b, "s", "assistant/message")[0].data.usage.inputTokens).toBeGreaterThan(5_000);
    expect(fs.readFileSync(logOf(), "utf8")).not.toContain('"type":"context/compacted"');
  });

  it("a summary the model did not finish (cut off at its length limit) is not recorded", async () => {
    const cut = { turns: [{ steps: [{ text: "done" }] }], compaction: { steps: [{ text: "SUMMARY: the user said hel", finishReason: "length" }] } };
    const c = await started(ws.script("s.json", cut));
    c.request("p", "session/prompt", promptParams("s", LONG_HELLO));
    await c.response("p");
    c.request("c", "session/compact", { sessionId: "s" });
    expect((await c.response("c")).result).toEqual({ compacted: false });
    expect(typed(c, "s", "context/compacted")).toHaveLength(0);
  });

  it("the scripted model answers a session's summarizing requests with its compaction steps in turn", async () => {
    const u = (text: string) => ({ steps: [{ text, usage: usage(1) }] });
    // A history holds one summary at most (a later one replaces it), so the count is the model's own.
    const three = {
      turns: [u("A1"), u(`A2 ${"b".repeat(90)}`), u(`A3 ${"c".repeat(90)}`), u("A4"), u("A5")],
      compaction: { steps: [{ text: "SUM-ONE" }, { text: "SUM-TWO" }, { text: "SUM-THREE" }] },
    };
    const c = await started(ws.script("s.json", three), { contextWindow: 1_024, compactAt: 1 });
    let n = 0;
    const prompts = [["U1", false], [`U2 ${"x".repeat(2_000)}`, false], [`U3 ${"y".repeat(90)}`, true], [`U4 ${"z".repeat(850)}`, true], [`U5 ${"w".repeat(90)}`, true]] as const;
    for (const [text, compactAfter] of prompts) {
      c.request(`p${++n}`, "session/prompt", promptParams("s", text));
      expect((await c.response(`p${n}`)).result.status).toBe("ok");
      if (!compactAfter) continue;
      c.request(`c${n}`, "session/compact", { sessionId: "s" });
      expect((await c.response(`c${n}`)).result).toEqual({ compacted: true });
    }
    expect(typed(c, "s", "context/compacted").map((e) => e.data.summary)).toEqual(["SUM-ONE", "SUM-TWO", "SUM-THREE"]);
  });

  it("a busy session is -32001, and stays usable", async () => {
    const c = await started(ws.script("s.json", script));
    c.request("p1", "session/prompt", promptParams("s", LONG_HELLO));
    await c.response("p1");
    c.request("p2", "session/prompt", promptParams("s", "slowly"));
    await c.waitFrame((f) => f.params?.event?.type === "assistant/chunk", "a chunk");
    c.request("c", "session/compact", { sessionId: "s" });
    expect((await c.response("c")).error).toMatchObject({ code: -32001, data: { kind: "session-busy" } });
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    c.request("c2", "session/compact", { sessionId: "s" });
    expect((await c.response("c2")).result).toEqual({ compacted: true });
  });

  it("a prompt sent while session/compact runs is -32001 saying the session is compacting; after it the prompt runs", async () => {
    const slow = { turns: [{ steps: [{ text: "done" }] }], compaction: { steps: [{ text: "SUMMARY: never sent", hang: true }] } };
    const c = await started(ws.script("s.json", slow));
    c.request("p1", "session/prompt", promptParams("s", LONG_HELLO));
    expect((await c.response("p1")).result.status).toBe("ok");
    c.request("c", "session/compact", { sessionId: "s" });
    // Requests start in the order they arrive, so the compaction is in flight before the prompt
    // is looked at, and stays so until cancelled (its summary never ends).
    c.request("p2", "session/prompt", promptParams("s", "meanwhile"));
    const refused = await c.response("p2");
    expect(refused.error).toMatchObject({ code: -32001, data: { kind: "session-busy", sessionId: "s" } });
    expect(refused.error?.message).toContain("compacting");
    c.request("x", "session/cancel", { sessionId: "s" });
    expect((await c.response("x")).result).toEqual({ cancelled: true });
    expect((await c.response("c")).result).toEqual({ compacted: false });
    c.request("p3", "session/prompt", promptParams("s", "now"));
    expect((await c.response("p3")).result.status).toBe("ok");
  });

  it("refuses contextWindow and compactAt out of range at initialize", async () => {
    const c = new RawClient();
    clients.push(c);
    c.request(1, "initialize", initParams(ws.dir, "demo", { compactAt: 1.5 }));
    c.request(2, "initialize", initParams(ws.dir, "demo", { contextWindow: 0 }));
    expect((await c.response(1)).error?.message).toContain("params.compactAt");
    expect((await c.response(2)).error?.message).toContain("params.contextWindow");
  });
});
