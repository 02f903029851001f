/**
 * Structured output end to end, over the raw wire against the built binary (scripted model):
 * `session/prompt.outputSchema` offers `final_answer`; a value valid the first time, on the
 * second try, never (`output-invalid`, plain-text answers reminded); bad and hostile schemas
 * (-32602 naming the field); non-object schemas wrapped as `value`; `output` on `turn/end`, in
 * the log, and a session that goes on after a restart.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import type { ScriptStep } from "../../src/providers/scripted.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
const roots: string[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-output-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
  ws.cleanup();
});

const answerSchema = { type: "object", properties: { answer: { type: "string" }, confidence: { type: "number", minimum: 0, maximum: 1 } }, required: ["answer"] };
const finalAnswer = (args: object): ScriptStep => ({ toolCalls: [{ name: "final_answer", arguments: args as any }] });

async function started(script: string, args = ["--stdio", "--no-session-log"], extra: object = {}): Promise<RawClient> {
  const c = new RawClient({ args });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script, extra));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

/** `d0` refers to `d1` twice, `d1` to `d2` twice, …: a few kilobytes that take 2^n steps to check. */
function exponentialRefs(n: number): object {
  const $defs: Record<string, object> = { [`d${n}`]: { type: "string" } };
  for (let i = 0; i < n; i++) $defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  return { $ref: "#/$defs/d0", $defs };
}

const structured = (sessionId: string, outputSchema: unknown, text = "what is it?") => ({ ...promptParams(sessionId, text), outputSchema });
const typed = (c: RawClient, sessionId: string, type: string) => c.events(sessionId).filter((e) => e.type === type);

describe("session/prompt.outputSchema", () => {
  it("a value valid the first time: the prompt answers exactly {status, reason}; turn/start holds the schema, turn/end the output", async () => {
    const c = await started(ws.script("s.json", oneTurn(finalAnswer({ answer: "forty-two", confidence: 0.9 }))));
    c.request("p", "session/prompt", structured("s", answerSchema));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(typed(c, "s", "turn/start")[0].data).toEqual({ turn: 1, outputSchema: answerSchema });
    expect(typed(c, "s", "turn/end")[0].data).toMatchObject({ turn: 1, reason: { kind: "completed" }, output: { answer: "forty-two", confidence: 0.9 } });
    const result = typed(c, "s", "tool/result")[0].data;
    expect(result).toMatchObject({ name: "final_answer", isError: false });
  });

  it("an invalid value goes back to the model with the validation error; the second try passes", async () => {
    const c = await started(ws.script("s.json", oneTurn(finalAnswer({ answer: 42 }), finalAnswer({ answer: "42" }))));
    c.request("p", "session/prompt", structured("s", answerSchema));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const [first, second] = typed(c, "s", "tool/result").map((e) => e.data);
    expect(first.isError).toBe(true);
    expect(first.content[0].text).toContain("answer/answer must be string");
    expect(first.content[0].text).toContain("2 attempts left");
    expect(second.isError).toBe(false);
    expect(typed(c, "s", "turn/end")[0].data.output).toEqual({ answer: "42" });
  });

  it("a model that never gives a valid value ends output-invalid after 3 attempts; a plain-text answer is reminded and counts", async () => {
    const c = await started(ws.script("s.json", oneTurn({ text: "It is 42." }, finalAnswer({ confidence: 2 }), finalAnswer({ answer: "x", confidence: -1 }), { text: "never reached" })));
    c.request("p", "session/prompt", structured("s", answerSchema));
    const res = (await c.response("p")).result;
    expect(Object.keys(res).sort()).toEqual(["reason", "status"]);
    expect(res.status).toBe("error");
    expect(res.reason.kind).toBe("output-invalid");
    expect(res.reason.message).toContain("after 3 attempts");
    expect(res.reason.message).toContain("answer/confidence must be >= 0");
    const reminders = typed(c, "s", "output/reminder");
    expect(reminders.map((e) => e.data.attempt)).toEqual([1]);
    expect(reminders[0].data.text).toContain("final_answer");
    expect(typed(c, "s", "turn/end")[0].data.output).toBeUndefined();
    expect(typed(c, "s", "assistant/message")).toHaveLength(3);
  });

  it("three plain-text answers end output-invalid too", async () => {
    const c = await started(ws.script("s.json", oneTurn({ text: "a" }, { text: "b" }, { text: "c" })));
    c.request("p", "session/prompt", structured("s", { type: "string" }));
    expect((await c.response("p")).result.reason.kind).toBe("output-invalid");
    expect(typed(c, "s", "output/reminder")).toHaveLength(2);
  });

  it("a schema that is not an object is wrapped as the 'value' argument; the output is the bare value", async () => {
    const c = await started(ws.script("s.json", oneTurn(finalAnswer({ value: [1, "2"] }), finalAnswer({ value: [1, 2] }))));
    const schema = { type: "array", items: { $ref: "#/$defs/n" }, $defs: { n: { type: "integer" } } };
    c.request("p", "session/prompt", structured("s", schema));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(typed(c, "s", "tool/result")[0].data.content[0].text).toContain("value/1 must be integer");
    expect(typed(c, "s", "turn/end")[0].data.output).toEqual([1, 2]);
  });

  it.each([
    ["an unknown type", { type: "nonsense" }, "must be equal to one of the allowed values"],
    ["a dangling $ref", { $ref: "#/$defs/missing" }, "can't resolve reference"],
    ["a pattern RE2 cannot run (lookahead)", { type: "string", pattern: "(?=a)a" }, "params.outputSchema"],
    ["a schema over 64 KiB", { type: "object", description: "x".repeat(70_000) }, "at most 65536"],
    ["a schema that is not an object", [{ type: "string" }], "params.outputSchema"],
    ["references that expand exponentially", exponentialRefs(40), "expand to more than 100000"],
    ["a reference that is not local", { $ref: "https://example.com/schema.json" }, "only local references"],
  ])("refuses %s with -32602 naming params.outputSchema, and the session stays usable", async (_what, schema, words) => {
    const c = await started(ws.script("s.json", turns([finalAnswer({ answer: "ok" })])));
    c.request("bad", "session/prompt", structured("s", schema));
    const res = await c.response("bad");
    expect(res.error?.code).toBe(-32602);
    expect(res.error?.message).toContain("params.outputSchema");
    expect(res.error?.message).toContain(words);
    expect(c.events("s")).toHaveLength(0);
    c.request("good", "session/prompt", structured("s", answerSchema));
    expect((await c.response("good")).result.status).toBe("ok");
  });

  it("a catastrophic pattern is matched in linear time (RE2), not backtracked", async () => {
    const c = await started(ws.script("s.json", oneTurn(finalAnswer({ value: `${"a".repeat(50_000)}!` }), finalAnswer({ value: "aaa" }))));
    c.request("p", "session/prompt", structured("s", { type: "string", pattern: "^(a+)+$" }));
    expect((await c.response("p")).result.status).toBe("ok");
    expect(typed(c, "s", "tool/result")[0].data.content[0].text).toContain('must match pattern');
  });

  it("a client tool may not take the name final_answer", async () => {
    const c = new RawClient();
    clients.push(c);
    c.request(1, "initialize", initParams(ws.dir, "demo", { clientTools: [{ name: "final_answer", description: "x", parameters: { type: "object" } }] }));
    expect((await c.response(1)).error?.message).toContain("reserved");
  });

  it("output is in the durable log, and the session goes on after a restart with the answer in its history", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-output-log-"));
    roots.push(root);
    const script = ws.script("s.json", turns([finalAnswer({ answer: "first" })], [{ text: "plain second turn" }]));
    const args = ["--stdio", "--session-root", root];
    const a = await started(script, args);
    a.request("p", "session/prompt", structured("s", answerSchema));
    expect((await a.response("p")).result.status).toBe("ok");
    a.request("bye", "shutdown");
    await a.response("bye");
    const log = fs.readdirSync(root).flatMap((d) => fs.readdirSync(path.join(root, d)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(root, d, f)))[0];
    const events = fs.readFileSync(log, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === "turn/end").data.output).toEqual({ answer: "first" });
    expect(events.find((e) => e.type === "turn/start").data.outputSchema).toEqual(answerSchema);

    const b = await started(script, args);
    b.request("p2", "session/prompt", promptParams("s", "and now?"));
    expect((await b.response("p2")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(typed(b, "s", "turn/start")[0].data).toEqual({ turn: 2 });
    expect(typed(b, "s", "assistant/message")[0].data.content).toEqual([{ type: "text", text: "plain second turn" }]);
  });
});
