/**
 * The agent loop in-process: AgentRuntime with the scripted provider, the real read_file tool
 * and a sink that records every event. Covers event order and seq, live-only chunks, invalid
 * and unknown tool calls, cancellation mid-stream, the durable log (resume, torn and corrupt
 * lines), maxSteps, finish reasons and usage.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentRuntime, SessionBusyError } from "../../src/agent/runtime.js";
import { SessionLogError, SessionStore } from "../../src/agent/store/index.js";
import type { SessionEvent, TurnEndReason } from "../../src/protocol/index.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import type { ModelMessage, ModelProvider, ModelRequest } from "../../src/providers/types.js";
import { silentLogger } from "../../src/log.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

interface Recorded {
  runtime: AgentRuntime;
  /** Every event, by session, in announcement order. */
  events: Map<string, SessionEvent[]>;
  /** The messages of every model request, deep-copied at request time. */
  requests: ModelMessage[][];
  store: SessionStore | undefined;
  /** Called for every event before it is recorded (to cancel at a chosen point). */
  onEvent?: (sessionId: string, event: SessionEvent) => void;
}

let ws: TempWorkspace;
let root: string;

beforeEach(() => {
  ws = tempWorkspace("hb-agent-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-agent-root-"));
  ws.file("notes.txt", "alpha\nbeta\ngamma\n");
});

afterEach(() => {
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

function makeRuntime(script: Script, options: { maxSteps?: number; durable?: boolean } = {}): Recorded {
  const inner = new ScriptedProvider(script);
  const requests: ModelMessage[][] = [];
  const provider: ModelProvider = {
    name: "scripted",
    stream(request: ModelRequest, signal: AbortSignal) {
      requests.push(structuredClone(request.messages));
      return inner.stream(request, signal);
    },
  };
  const store = options.durable === false ? undefined : new SessionStore(root, ws.dir);
  const rec: Recorded = { events: new Map(), requests, store } as Recorded;
  rec.runtime = new AgentRuntime({
    workspace: ws.dir,
    provider,
    model: "test-script",
    system: "You are a test.",
    maxSteps: options.maxSteps ?? 10,
    permissionMode: "workspace-write",
    tools: [readFileTool],
    subagentDepth: 0,
    store,
    logger: silentLogger,
    sink: {
      sessionEvent: async (sessionId, event) => {
        rec.onEvent?.(sessionId, event);
        const list = rec.events.get(sessionId) ?? [];
        list.push(structuredClone(event));
        rec.events.set(sessionId, list);
      },
      subagentStarted: async () => undefined,
      subagentFinished: async () => undefined,
    },
  });
  return rec;
}

const text = (t: string) => [{ type: "text" as const, text: t }];

function logLines(rec: Recorded, sessionId: string): any[] {
  return fs
    .readFileSync(rec.store!.pathOf(sessionId), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Event types with runs of assistant/chunk collapsed to one "chunk*". */
function shape(events: SessionEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    const t = e.type === "assistant/chunk" ? "chunk*" : e.type;
    if (t === "chunk*" && out[out.length - 1] === "chunk*") continue;
    out.push(t);
  }
  return out;
}

function of<T extends SessionEvent["type"]>(events: SessionEvent[], type: T): Extract<SessionEvent, { type: T }>[] {
  return events.filter((e) => e.type === type) as never;
}

const toolTurn = oneTurn(
  { reasoning: "I should read it.", text: "Reading notes.", toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "notes.txt" } }], chunkSize: 4 },
  { text: "The notes say alpha, beta, gamma.", chunkSize: 5 },
);

describe("a tool turn", () => {
  it("emits events in order with strictly increasing seq, runs the real tool, and logs everything but chunks", async () => {
    const rec = makeRuntime(toolTurn);
    const reason = await rec.runtime.prompt("s1", text("what is in notes.txt?"));
    expect(reason).toEqual({ kind: "completed" });
    const events = rec.events.get("s1")!;
    expect(shape(events)).toEqual([
      "user/message",
      "turn/start",
      "step/start",
      "chunk*",
      "assistant/message",
      "tool/result",
      "step/start",
      "chunk*",
      "assistant/message",
      "turn/end",
    ]);
    const seqs = events.map((e) => e.seq);
    expect(seqs[0]).toBe(1);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);

    const [first, second] = of(events, "assistant/message");
    expect(first.data).toMatchObject({ turn: 1, step: 1, finishReason: "tool-calls" });
    expect(first.data.content).toEqual([
      { type: "reasoning", text: "I should read it." },
      { type: "text", text: "Reading notes." },
      { type: "tool-call", id: "c1", name: "read_file", arguments: { path: "notes.txt" } },
    ]);
    const [result] = of(events, "tool/result");
    expect(result.data).toMatchObject({ callId: "c1", name: "read_file", isError: false });
    expect(result.data.content.map((b) => b.text).join("")).toContain("beta");
    expect(second.data).toMatchObject({ turn: 1, step: 2, finishReason: "stop", content: [{ type: "text", text: "The notes say alpha, beta, gamma." }] });
    // The chunks reassemble the message they announce.
    const chunks2 = of(events, "assistant/chunk").filter((c) => c.data.step === 2);
    expect(chunks2.map((c) => (c.data.chunk as { text: string }).text).join("")).toBe("The notes say alpha, beta, gamma.");
    expect(of(events, "turn/end")[0].data).toMatchObject({ turn: 1, reason: { kind: "completed" } });

    // The second model request carried the tool result.
    expect(rec.requests).toHaveLength(2);
    expect(rec.requests[1].map((m) => m.role)).toEqual(["user", "assistant", "tool"]);

    // Durable log: header, then exactly the non-chunk events, same order and seq.
    const log = logLines(rec, "s1");
    expect(log[0]).toMatchObject({ type: "session-header", version: 1, sessionId: "s1", workspace: ws.dir });
    const durable = events.filter((e) => e.type !== "assistant/chunk");
    expect(log.slice(1)).toEqual(durable);
    expect(log.some((l) => l.type === "assistant/chunk")).toBe(false);
  });

  it("records invalid tool-call JSON as arguments {} plus rawArguments, answers it with an error, and goes on", async () => {
    const raw = '{"path": "notes.txt",';
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "bad", name: "read_file", rawArguments: raw }] }, { text: "Sorry, retrying is pointless." }));
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason).toEqual({ kind: "completed" });
    const events = rec.events.get("s")!;
    const [msg] = of(events, "assistant/message");
    expect(msg.data.content).toEqual([{ type: "tool-call", id: "bad", name: "read_file", arguments: {}, rawArguments: raw }]);
    const [result] = of(events, "tool/result");
    expect(result.data).toMatchObject({ callId: "bad", name: "read_file", isError: true });
    expect(result.data.content[0].text).toMatch(/not a valid JSON object/);
    expect(of(events, "assistant/message")).toHaveLength(2);
  });

  it("a JSON array as arguments is not an object: arguments {} plus rawArguments", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "arr", name: "read_file", rawArguments: "[1,2]" }] }, { text: "ok" }));
    await rec.runtime.prompt("s", text("go"));
    const [msg] = of(rec.events.get("s")!, "assistant/message");
    expect(msg.data.content[0]).toEqual({ type: "tool-call", id: "arr", name: "read_file", arguments: {}, rawArguments: "[1,2]" });
    expect(of(rec.events.get("s")!, "tool/result")[0].data.isError).toBe(true);
  });

  it("answers an unknown tool with an error result naming the offered tools, and goes on", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "u1", name: "launch_rockets", arguments: {} }] }, { text: "I cannot." }));
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason).toEqual({ kind: "completed" });
    const [result] = of(rec.events.get("s")!, "tool/result");
    expect(result.data).toMatchObject({ callId: "u1", name: "launch_rockets", isError: true });
    expect(result.data.content[0].text).toMatch(/unknown tool 'launch_rockets'.*read_file/);
  });

  it("a tool failure (missing file) is an error result, not a turn failure", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "m", name: "read_file", arguments: { path: "missing.txt" } }] }, { text: "Not there." }));
    expect(await rec.runtime.prompt("s", text("go"))).toEqual({ kind: "completed" });
    const [result] = of(rec.events.get("s")!, "tool/result");
    expect(result.data.isError).toBe(true);
    expect(result.data.content[0].text).toContain("missing.txt");
  });

  it("refuses a second prompt for a busy session synchronously, and cancel of an idle session is false", async () => {
    const rec = makeRuntime(oneTurn({ text: "slow", chunkSize: 1, delayMs: 20 }));
    const first = rec.runtime.prompt("s", text("one"));
    expect(() => rec.runtime.prompt("s", text("two"))).toThrow(SessionBusyError);
    expect(await first).toEqual({ kind: "completed" });
    expect(await rec.runtime.cancel("s")).toBe(false);
    expect(await rec.runtime.cancel("never-seen")).toBe(false);
    expect(fs.existsSync(rec.store!.pathOf("never-seen"))).toBe(false);
  });
});

describe("cancellation", () => {
  it("mid-stream: records the partial message as aborted, answers every unanswered call, and the session works on", async () => {
    const script = turns(
      [
        {
          text: "Let me read two files.",
          toolCalls: [
            { id: "a", name: "read_file", arguments: { path: "notes.txt" } },
            { id: "b", name: "read_file", arguments: { path: "notes.txt", limit: 1 } },
          ],
          chunkSize: 3,
          hang: true,
        },
      ],
      [{ text: "Fresh turn." }],
    );
    const rec = makeRuntime(script);
    let cancelled: Promise<boolean> | undefined;
    rec.onEvent = (_id, event) => {
      if (event.type === "assistant/chunk" && event.data.chunk.type === "tool-call-delta" && event.data.chunk.index === 1 && !cancelled) {
        // Let the rest of the stream arrive, then cancel while the step hangs.
        setTimeout(() => {
          cancelled = rec.runtime.cancel("s");
        }, 20);
      }
    };
    const reason = await rec.runtime.prompt("s", text("read"));
    expect(reason).toEqual({ kind: "aborted" });
    expect(await cancelled).toBe(true);
    const events = rec.events.get("s")!;
    expect(shape(events)).toEqual(["user/message", "turn/start", "step/start", "chunk*", "assistant/message", "tool/result", "tool/result", "turn/end"]);
    const [msg] = of(events, "assistant/message");
    expect(msg.data.finishReason).toBe("aborted");
    expect(msg.data.content).toEqual([
      { type: "text", text: "Let me read two files." },
      { type: "tool-call", id: "a", name: "read_file", arguments: { path: "notes.txt" } },
      { type: "tool-call", id: "b", name: "read_file", arguments: { path: "notes.txt", limit: 1 } },
    ]);
    const results = of(events, "tool/result");
    expect(results.map((r) => r.data.callId)).toEqual(["a", "b"]);
    for (const r of results) {
      expect(r.data.isError).toBe(true);
      expect(r.data.content[0].text).toMatch(/abort/);
    }
    expect(of(events, "turn/end")[0].data.reason).toEqual({ kind: "aborted" });

    // The next prompt on the same session works, and its request carries a valid history.
    expect(await rec.runtime.prompt("s", text("again"))).toEqual({ kind: "completed" });
    const last = rec.requests[rec.requests.length - 1];
    expect(last.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
    const after = rec.events.get("s")!;
    expect(of(after, "turn/start").map((e) => e.data.turn)).toEqual([1, 2]);
    const log = logLines(rec, "s");
    expect(log.filter((l) => l.type === "turn/end").map((l) => l.data.reason.kind)).toEqual(["aborted", "completed"]);
  });

  it("mid-text: the text streamed so far is kept", async () => {
    const rec = makeRuntime(turns([{ text: "abcdefghijklmnopqrstuvwxyz", chunkSize: 1, delayMs: 5 }], [{ text: "next" }]));
    let chunks = 0;
    let cancelled: Promise<boolean> | undefined;
    rec.onEvent = (_id, e) => {
      if (e.type === "assistant/chunk" && ++chunks === 5) cancelled = rec.runtime.cancel("s");
    };
    expect(await rec.runtime.prompt("s", text("go"))).toEqual({ kind: "aborted" });
    expect(await cancelled).toBe(true);
    const [msg] = of(rec.events.get("s")!, "assistant/message");
    expect(msg.data.finishReason).toBe("aborted");
    const partial = (msg.data.content[0] as { text: string }).text;
    expect(partial.length).toBeGreaterThanOrEqual(5);
    expect(partial.length).toBeLessThan(26);
    expect("abcdefghijklmnopqrstuvwxyz".startsWith(partial)).toBe(true);
    expect(await rec.runtime.prompt("s", text("again"))).toEqual({ kind: "completed" });
  });
});

describe("the durable log", () => {
  async function firstProcess(): Promise<Recorded> {
    const rec = makeRuntime(turns(toolTurn.turns[0].steps, [{ text: "Second answer." }]));
    expect(await rec.runtime.prompt("s", text("first question"))).toEqual({ kind: "completed" });
    rec.runtime.closeAll();
    return rec;
  }

  it("a second runtime on the same root resumes: history, seq and turn numbers continue", async () => {
    const one = await firstProcess();
    const oldEvents = one.events.get("s")!;
    const highest = Math.max(...logLines(one, "s").slice(1).map((l) => l.seq));

    const two = makeRuntime(turns(toolTurn.turns[0].steps, [{ text: "Second answer." }]));
    expect(await two.runtime.prompt("s", text("second question"))).toEqual({ kind: "completed" });
    const sent = two.requests[0];
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(sent[0]).toEqual({ role: "user", content: text("first question") });
    expect(sent[4]).toEqual({ role: "user", content: text("second question") });
    const events = two.events.get("s")!;
    expect(events[0].seq).toBe(highest + 1);
    expect(highest).toBe(oldEvents[oldEvents.length - 1].seq);
    expect(of(events, "turn/start")[0].data.turn).toBe(2);
    expect(of(events, "assistant/message")[0].data.content).toEqual(text("Second answer."));
    const log = logLines(two, "s");
    expect(log.filter((l) => l.type === "session-header")).toHaveLength(1);
    const seqs = log.slice(1).map((l) => l.seq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);
    two.runtime.closeAll();
  });

  it.each([
    ["a partial last line", '{"type":"turn/start","seq":999,"ti'],
    ["a whole but unparsable last line", '{"type":"turn/start","seq":999,"ti\n'],
  ])("ignores and cuts %s", async (_what, torn) => {
    const one = await firstProcess();
    const file = one.store!.pathOf("s");
    const good = fs.readFileSync(file, "utf8");
    fs.appendFileSync(file, torn);
    const two = makeRuntime(turns(toolTurn.turns[0].steps, [{ text: "Second answer." }]));
    expect(await two.runtime.prompt("s", text("again"))).toEqual({ kind: "completed" });
    two.runtime.closeAll();
    const after = fs.readFileSync(file, "utf8");
    expect(after.startsWith(good)).toBe(true);
    expect(after).not.toContain('"seq":999');
    // Every line parses: the new events started on a clean line.
    const lines = after.split("\n");
    expect(lines.pop()).toBe("");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(two.requests[0].map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
  });

  it("a corrupt middle line is a clear error naming the file and line", async () => {
    const one = await firstProcess();
    const file = one.store!.pathOf("s");
    const lines = fs.readFileSync(file, "utf8").split("\n");
    lines.splice(2, 0, "this is not json");
    fs.writeFileSync(file, lines.join("\n"));
    const two = makeRuntime(oneTurn({ text: "x" }));
    let caught: unknown;
    try {
      await two.runtime.prompt("s", text("again"));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SessionLogError);
    expect((caught as Error).message).toContain(file);
    expect((caught as Error).message).toMatch(/line 3/);
    // Nothing was announced and the file was left as it was.
    expect(two.events.get("s")).toBeUndefined();
    expect(fs.readFileSync(file, "utf8")).toBe(lines.join("\n"));
    // The session is not stuck busy.
    expect(two.runtime.isBusy("s")).toBe(false);
  });

  it("a log without a header line is a clear error", async () => {
    const one = await firstProcess();
    const file = one.store!.pathOf("s");
    const lines = fs.readFileSync(file, "utf8").split("\n");
    fs.writeFileSync(file, lines.slice(1).join("\n"));
    const two = makeRuntime(oneTurn({ text: "x" }));
    expect(() => two.runtime.prompt("s", text("again"))).toThrow(SessionLogError);
  });
});

describe("turn end reasons and usage", () => {
  it("maxSteps ends the turn with max-steps after the last allowed step's tools ran", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "t", name: "read_file", arguments: { path: "notes.txt" } }] }, { text: "never" }), { maxSteps: 1 });
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason).toEqual({ kind: "max-steps", limit: 1 });
    const events = rec.events.get("s")!;
    expect(of(events, "step/start")).toHaveLength(1);
    expect(of(events, "tool/result")).toHaveLength(1);
    expect(rec.requests).toHaveLength(1);
    expect(of(events, "turn/end")[0].data.reason).toEqual({ kind: "max-steps", limit: 1 });
  });

  it('finishReason "length" → max-tokens, and the message keeps "length"', async () => {
    const rec = makeRuntime(oneTurn({ text: "cut off mid", finishReason: "length" }));
    expect(await rec.runtime.prompt("s", text("go"))).toEqual({ kind: "max-tokens" });
    const [msg] = of(rec.events.get("s")!, "assistant/message");
    expect(msg.data.finishReason).toBe("length");
    expect(msg.data.content).toEqual(text("cut off mid"));
  });

  it("an unknown finish reason → model-error naming it", async () => {
    const rec = makeRuntime(oneTurn({ text: "filtered", finishReason: "content_filter" }));
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason.kind).toBe("model-error");
    expect((reason as { message: string }).message).toContain("content_filter");
    // The message keeps the provider's value (FinishReason: other provider values pass through).
    const [msg] = of(rec.events.get("s")!, "assistant/message");
    expect(msg.data.finishReason).toBe("content_filter");
  });

  it("a model error → model-error with message, httpStatus and code; partial text recorded", async () => {
    const rec = makeRuntime(oneTurn({ text: "partial", error: { message: "upstream exploded", httpStatus: 503, code: "http" } }));
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason).toEqual({ kind: "model-error", message: "upstream exploded", httpStatus: 503, code: "http" });
    const [msg] = of(rec.events.get("s")!, "assistant/message");
    expect(msg.data).toMatchObject({ finishReason: "error", content: text("partial") });
  });

  it("a model error with tool calls answers each call with an error result", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "x", name: "read_file", arguments: { path: "notes.txt" } }], error: { message: "reset" } }));
    const reason: TurnEndReason = await rec.runtime.prompt("s", text("go"));
    expect(reason.kind).toBe("model-error");
    const [result] = of(rec.events.get("s")!, "tool/result");
    expect(result.data).toMatchObject({ callId: "x", isError: true });
  });

  it("turn/end usage is the sum over the turn's steps", async () => {
    const rec = makeRuntime(
      oneTurn(
        { toolCalls: [{ id: "a", name: "read_file", arguments: { path: "notes.txt" } }], usage: { inputTokens: 10, outputTokens: 5, reasoningTokens: 2 } },
        { toolCalls: [{ id: "b", name: "read_file", arguments: { path: "notes.txt" } }], usage: { inputTokens: 20, outputTokens: 7, cacheHitTokens: 3 } },
        { text: "done", usage: { inputTokens: 40, outputTokens: 1 } },
      ),
    );
    expect(await rec.runtime.prompt("s", text("go"))).toEqual({ kind: "completed" });
    const events = rec.events.get("s")!;
    expect(of(events, "assistant/message").map((m) => m.data.usage)).toEqual([
      { inputTokens: 10, outputTokens: 5, reasoningTokens: 2 },
      { inputTokens: 20, outputTokens: 7, cacheHitTokens: 3 },
      { inputTokens: 40, outputTokens: 1 },
    ]);
    expect(of(events, "turn/end")[0].data.usage).toEqual({ inputTokens: 70, outputTokens: 13, reasoningTokens: 2, cacheHitTokens: 3 });
  });

  it("a script without the step the loop asks for is a model error, not a crash", async () => {
    const rec = makeRuntime(oneTurn({ toolCalls: [{ id: "a", name: "read_file", arguments: { path: "notes.txt" } }] }));
    const reason = await rec.runtime.prompt("s", text("go"));
    expect(reason.kind).toBe("model-error");
    expect(of(rec.events.get("s")!, "turn/end")).toHaveLength(1);
  });
});

describe("resuming a turn the process did not finish", () => {
  it("a log cut off after a tool-call message (no result, no turn/end) resumes with every call answered", async () => {
    const one = makeRuntime(oneTurn({ text: "Reading.", toolCalls: [{ id: "k1", name: "read_file", arguments: { path: "notes.txt" } }], hang: true }));
    let cut: Promise<boolean> | undefined;
    one.onEvent = (_id, e) => {
      if (e.type === "assistant/chunk" && e.data.chunk.type === "tool-call-delta" && !cut) setTimeout(() => (cut = one.runtime.cancel("s")), 20);
    };
    await one.runtime.prompt("s", text("first"));
    await cut;
    one.runtime.closeAll();
    // Simulate the process being killed right after the assistant message was logged.
    const file = one.store!.pathOf("s");
    const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
    const msgAt = lines.findIndex((l) => JSON.parse(l).type === "assistant/message");
    fs.writeFileSync(file, `${lines.slice(0, msgAt + 1).join("\n")}\n`);

    const two = makeRuntime(turns([{ text: "unused" }], [{ text: "Resumed fine." }]));
    expect(await two.runtime.prompt("s", text("second"))).toEqual({ kind: "completed" });
    const sent = two.requests[0];
    // Every tool call of an assistant message is answered before the next user message.
    for (let i = 0; i < sent.length; i++) {
      const m = sent[i];
      if (m.role !== "assistant") continue;
      const ids = m.content.filter((b) => b.type === "tool-call").map((b) => (b as { id: string }).id);
      const answered = sent.slice(i + 1).filter((n, j, rest) => n.role === "tool" && rest.slice(0, j).every((r) => r.role === "tool"));
      expect(answered.map((n) => (n as { callId: string }).callId)).toEqual(ids);
    }
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(of(two.events.get("s")!, "turn/start")[0].data.turn).toBe(2);
  });
});
