/**
 * Cost and budget end to end, over the raw wire against the built binary (PROTOCOL.md "Turn
 * control", docs/PROTOCOL.md "Cost and budget"): `usage.costUsd` per step from
 * `initialize.prices` or the built-in DeepSeek table, summed on `turn/end`; none for a model
 * whose prices are unknown; `maxCostUsd` ends the turn `budget` before the next request once
 * reached; a budget without prices, and bad prices or budgets, are -32602.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { DEEPSEEK_PRICES } from "../../src/agent/prices.js";
import { useFakeDeepSeek } from "../support/use-fake-deepseek.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-cost-");
  ws.file("notes.txt", "the notes\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

const PRICES = { inputPerMTok: 2, cacheHitPerMTok: 0.5, outputPerMTok: 8 };
const STEP1 = { inputTokens: 1_000, outputTokens: 100, cacheHitTokens: 400 };
const STEP2 = { inputTokens: 2_000, outputTokens: 50 };
/** What each step costs at PRICES: hits at the hit rate, the rest of the input at the input rate, output at the output rate. */
const COST1 = (400 * 0.5 + 600 * 2 + 100 * 8) / 1e6;
const COST2 = (2_000 * 2 + 50 * 8) / 1e6;
const TWO_STEPS = {
  turns: [{ steps: [{ toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }], usage: STEP1 }, { text: "read it", usage: STEP2 }] }],
};

function start(env?: NodeJS.ProcessEnv): RawClient {
  const c = new RawClient({ args: ["--stdio", "--no-session-log"], env });
  clients.push(c);
  return c;
}

async function started(extra: object = {}, script: object = TWO_STEPS): Promise<RawClient> {
  const c = start();
  c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script as never), extra));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

const typed = (c: RawClient, sessionId: string, type: string) => c.events(sessionId).filter((e) => e.type === type);

describe("usage.costUsd", () => {
  it("initialize.prices: each step's usage carries its cost, turn/end the sum", async () => {
    const c = await started({ prices: PRICES });
    c.request("p", "session/prompt", promptParams("s", "read the notes"));
    expect((await c.response("p")).result.status).toBe("ok");
    const [m1, m2] = typed(c, "s", "assistant/message");
    expect(m1.data.usage).toEqual({ ...STEP1, costUsd: COST1 });
    expect(m2.data.usage).toEqual({ ...STEP2, costUsd: COST2 });
    expect(typed(c, "s", "turn/end")[0].data.usage.costUsd).toBeCloseTo(COST1 + COST2, 12);
  });

  it("cacheHitPerMTok absent: cache hits are priced as input", async () => {
    const c = await started({ prices: { inputPerMTok: 2, outputPerMTok: 8 } });
    c.request("p", "session/prompt", promptParams("s", "read the notes"));
    await c.response("p");
    expect(typed(c, "s", "assistant/message")[0].data.usage.costUsd).toBeCloseTo((1_000 * 2 + 100 * 8) / 1e6, 12);
  });

  it("a model with unknown prices (the scripted one, no initialize.prices): no costUsd anywhere, never a guess", async () => {
    const c = await started();
    c.request("p", "session/prompt", promptParams("s", "read the notes"));
    expect((await c.response("p")).result.status).toBe("ok");
    for (const e of [...typed(c, "s", "assistant/message"), ...typed(c, "s", "turn/end")]) {
      expect(e.data.usage).toBeDefined();
      expect(e.data.usage).not.toHaveProperty("costUsd");
    }
  });
});

describe("session/prompt.maxCostUsd", () => {
  it("once the turn's cost reached the limit, no further model request: the turn ends budget (status error)", async () => {
    const c = await started({ prices: PRICES });
    c.request("p", "session/prompt", { ...promptParams("s", "read the notes"), maxCostUsd: 0.001 });
    const res = (await c.response("p")).result;
    expect(res).toEqual({ status: "error", reason: { kind: "budget", limitUsd: 0.001, costUsd: COST1 } });
    // The step that spent it ran its tools; no second step started.
    expect(typed(c, "s", "step/start")).toHaveLength(1);
    expect(typed(c, "s", "tool/result")).toHaveLength(1);
    expect(typed(c, "s", "turn/end")[0].data).toMatchObject({ reason: res.reason, usage: { costUsd: COST1 } });
  });

  it("a subagent's requests count against the turn's budget: `task` cannot spend past it", async () => {
    // The parent's own step is cheap; the subagent's first step spends the whole budget. Were
    // the subagent unbudgeted, it would go on (and `task` could be called again and again).
    const cheap = { inputTokens: 10, outputTokens: 1 };
    const script = {
      turns: [{ steps: [{ toolCalls: [{ id: "t1", name: "task", arguments: { prompt: "read the notes three times" } }], usage: cheap }, { text: "done", usage: cheap }] }],
      subagent: {
        turns: [
          {
            steps: [
              { toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }], usage: STEP1 },
              { toolCalls: [{ id: "r2", name: "read_file", arguments: { path: "notes.txt" } }], usage: STEP1 },
              { text: "read it", usage: STEP2 },
            ],
          },
        ],
      },
    };
    const c = await started({ prices: PRICES }, script);
    c.request("p", "session/prompt", { ...promptParams("s", "delegate"), maxCostUsd: 0.001 });
    const res = (await c.response("p")).result;
    const cheapCost = (10 * 2 + 1 * 8) / 1e6;
    expect(res.status).toBe("error");
    expect(res.reason.kind).toBe("budget");
    expect(res.reason.costUsd).toBeCloseTo(cheapCost + COST1, 12);
    // The subagent made one request, the parent none after the task's result.
    const child = c.frames.find((f: any) => f.method === "subagent.started")?.params.childSessionId;
    expect(typed(c, child, "step/start")).toHaveLength(1);
    expect(typed(c, child, "turn/end")[0].data.reason.kind).toBe("budget");
    expect(typed(c, "s", "step/start")).toHaveLength(1);
  });

  it("a limit the turn does not reach changes nothing", async () => {
    const c = await started({ prices: PRICES });
    c.request("p", "session/prompt", { ...promptParams("s", "read the notes"), maxCostUsd: 1 });
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(typed(c, "s", "step/start")).toHaveLength(2);
  });

  it("the budget is per turn: the next turn starts from zero", async () => {
    const c = await started({ prices: PRICES }, { turns: [{ steps: [{ text: "one", usage: STEP1 }] }, { steps: [{ text: "two", usage: STEP1 }] }] });
    c.request("p1", "session/prompt", { ...promptParams("s", "first"), maxCostUsd: COST1 * 1.5 });
    expect((await c.response("p1")).result.status).toBe("ok");
    c.request("p2", "session/prompt", { ...promptParams("s", "second"), maxCostUsd: COST1 * 1.5 });
    expect((await c.response("p2")).result.status).toBe("ok");
  });

  it("a budget for a model whose prices are unknown is refused (-32602 no-prices) before the turn starts", async () => {
    const c = await started();
    c.request("p", "session/prompt", { ...promptParams("s", "read the notes"), maxCostUsd: 1 });
    const res = await c.response("p");
    expect(res.error).toMatchObject({ code: -32602, data: { kind: "no-prices" } });
    // The option's name in the SDK too, as for initialize.model: a Python user never sees the wire.
    expect(res.error?.message).toContain("give initialize.prices (prices= in the Python SDK) to set a budget");
    expect(c.events("s")).toHaveLength(0);
    c.request("ok", "session/prompt", promptParams("s", "read the notes"));
    expect((await c.response("ok")).result.status).toBe("ok");
  });

  it.each([
    ["negative", -1],
    ["zero (no request could ever be made)", 0],
    ["a string", "1"],
    ["null", null],
    ["a boolean", true],
    ["an object", { usd: 1 }],
  ])("maxCostUsd %s: -32602 invalid-params naming the field; the bridge keeps serving", async (_what, value) => {
    const c = await started({ prices: PRICES });
    c.request("bad", "session/prompt", { ...promptParams("s", "hi"), maxCostUsd: value });
    const res = await c.response("bad");
    expect(res.error).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
    expect(res.error?.message).toContain("params.maxCostUsd");
    c.request("ok", "session/prompt", promptParams("s", "read the notes"));
    expect((await c.response("ok")).result.status).toBe("ok");
  });

  it.each([-1, 0])("maxCostUsd %s gets one message, not a >=0 and a >0 that disagree", async (value) => {
    const c = await started({ prices: PRICES });
    c.request("bad", "session/prompt", { ...promptParams("s", "hi"), maxCostUsd: value });
    const res = await c.response("bad");
    expect(res.error?.message).toBe("invalid params: params.maxCostUsd: a budget must be more than 0 (US dollars)");
  });

  it("a number JSON can only write as infinity (1e400) is refused too", async () => {
    const c = await started({ prices: PRICES });
    c.send(`{"jsonrpc":"2.0","id":"bad","method":"session/prompt","params":{"sessionId":"s","contentBlocks":[{"type":"text","text":"hi"}],"maxCostUsd":1e400}}`);
    const res = await c.response("bad");
    expect(res.error).toMatchObject({ code: -32602 });
    expect(res.error?.message).toContain("params.maxCostUsd");
  });
});

describe("initialize.prices params", () => {
  it.each([
    ["a negative price", { inputPerMTok: -1, outputPerMTok: 1 }, "params.prices.inputPerMTok"],
    ["a missing output price", { inputPerMTok: 1 }, "params.prices.outputPerMTok"],
    ["a string price", { inputPerMTok: "1", outputPerMTok: 1 }, "params.prices.inputPerMTok"],
    ["an unknown key", { inputPerMTok: 1, outputPerMTok: 1, peak: 2 }, "params.prices"],
    ["not an object", "cheap", "params.prices"],
    ["a negative cache-hit price", { inputPerMTok: 1, cacheHitPerMTok: -0.1, outputPerMTok: 1 }, "params.prices.cacheHitPerMTok"],
  ])("%s: -32602 naming the field; a valid initialize still succeeds after it", async (_what, prices, field) => {
    const c = start();
    c.request("bad", "initialize", initParams(ws.dir, "demo", { prices }));
    const res = await c.response("bad");
    expect(res.error).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
    expect(res.error?.message).toContain(field);
    c.request("good", "initialize", initParams(ws.dir, "demo"));
    expect((await c.response("good")).error).toBeUndefined();
  });
});

describe("the built-in DeepSeek price table (fake DeepSeek server)", () => {
  const deepseek = useFakeDeepSeek();
  const server = deepseek.server;

  const answer = {
    events: [
      { delta: { content: "hello" } },
      { delta: {}, finish_reason: "stop" },
      { usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52, prompt_cache_hit_tokens: 10, prompt_cache_miss_tokens: 30 } },
    ],
  };

  async function promptWith(model: string, extra: object = {}): Promise<RawClient> {
    server.table = { hi: [answer] };
    const c = start(deepseek.env({ HARNESS_RETRY_BASE_MS: "10" }));
    c.request("init", "initialize", { cwd: ws.dir, provider: "deepseek", model, ...extra });
    expect((await c.response("init")).error).toBeUndefined();
    c.request("p", "session/prompt", promptParams("s", "hi"));
    expect((await c.response("p")).result.status).toBe("ok");
    return c;
  }

  it.each(["deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat"])("%s: priced from the table", async (model) => {
    const c = await promptWith(model);
    const table = DEEPSEEK_PRICES.get(model);
    expect(table).toBeDefined();
    const expected = (10 * (table?.cacheHitPerMTok ?? NaN) + 30 * (table?.inputPerMTok ?? NaN) + 12 * (table?.outputPerMTok ?? NaN)) / 1e6;
    expect(typed(c, "s", "assistant/message")[0].data.usage.costUsd).toBeCloseTo(expected, 12);
    expect(typed(c, "s", "turn/end")[0].data.usage.costUsd).toBeCloseTo(expected, 12);
    expect(server.problems).toEqual([]);
  });

  it("with a budget, a request whose usage the server did not report ends the turn budget: its cost is unknown, so no further request starts", async () => {
    // A gateway that ignores stream_options.include_usage (or a hostile one) would otherwise
    // make every request free to the budget: the turn would run to maxSteps unbounded.
    const call = (id: string) => ({ events: [{ delta: { tool_calls: [{ index: 0, id, type: "function", function: { name: "read_file", arguments: '{"path":"notes.txt"}' } }] } }, { delta: {}, finish_reason: "tool_calls" }] });
    server.table = { loop: [call("c1"), call("c2"), call("c3"), { events: [{ delta: { content: "done" } }, { delta: {}, finish_reason: "stop" }] }] };
    const asked = server.requests.length;
    const c = start(deepseek.env({ HARNESS_RETRY_BASE_MS: "10" }));
    c.request("init", "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash" });
    expect((await c.response("init")).error).toBeUndefined();
    c.request("p", "session/prompt", { ...promptParams("s", "loop"), maxCostUsd: 1 });
    const result = (await c.response("p")).result;
    expect(result.status).toBe("error");
    expect(result.reason).toEqual({ kind: "budget", limitUsd: 1, costUsd: 0 });
    expect(server.requests.length - asked).toBe(1);
    // The tool call of the step that ran is answered: the history stays whole.
    expect(typed(c, "s", "tool/result")).toHaveLength(1);
  });

  it("a model the table does not know: no costUsd", async () => {
    const c = await promptWith("deepseek-v9-imaginary");
    expect(typed(c, "s", "assistant/message")[0].data.usage).not.toHaveProperty("costUsd");
    expect(typed(c, "s", "turn/end")[0].data.usage).not.toHaveProperty("costUsd");
  });

  it("initialize.prices replaces the table", async () => {
    const c = await promptWith("deepseek-flash", { prices: { inputPerMTok: 1, cacheHitPerMTok: 0.1, outputPerMTok: 2 } });
    expect(typed(c, "s", "assistant/message")[0].data.usage.costUsd).toBeCloseTo((10 * 0.1 + 30 * 1 + 12 * 2) / 1e6, 12);
  });
});
