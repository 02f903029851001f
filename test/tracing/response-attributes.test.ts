/**
 * What the server says answered, and what the summary cost, on the chat spans, through the
 * built binary, a fake DeepSeek and a real OpenTelemetry Collector (test/support/otel-collector.ts):
 *
 * - every chat span of an HTTP provider carries `gen_ai.response.id` and `gen_ai.response.model`
 *   from the streamed chunks, the compaction's summarizing request too; a response model other
 *   than the requested one (a gateway's routing) shows as sent, beside the request's;
 * - the server's values are untrusted: only printable text is kept, cut at MAX_SERVER_LABEL;
 * - the summarizing chat span has `harness.usage.cost_usd` like the turn's other chat spans, so
 *   the turn's span cost is its turn/end's.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SUMMARIZE_INSTRUCTION } from "../../src/agent/compaction.js";
import { roundUsd, withCost } from "../../src/agent/cost.js";
import { MAX_SERVER_LABEL } from "../../src/providers/openai-compatible/chunks.js";
import { Collector, otelcolHere, otelcolNote, type ReceivedSpan } from "../support/otel-collector.js";
import { FakeDeepSeek, fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { RawClient, promptParams } from "../support/raw-client.js";
import { requestTokens } from "../support/server-rules.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const PRICES = { inputPerMTok: 1, outputPerMTok: 2 };
const ROUTED = "deepseek-v4-pro-via-gateway";
/** A hostile id: terminal escapes, a bell, a right-to-left override, a lone surrogate, and far too long. */
const HOSTILE_ID = `resp-\u001b[31mred\u0007\u202e${"x".repeat(1_000)}\ud800`;

const say = (text: string, prompt: number, extra: { model?: string; id?: string } = {}) => ({
  ...extra,
  events: [{ delta: { role: "assistant", content: "" } }, { delta: { content: text } }, { delta: {}, finish_reason: "stop" }, { usage: { prompt_tokens: prompt, completion_tokens: 100, total_tokens: prompt + 100 } }],
});

let ws: TempWorkspace;
let fake: FakeDeepSeek;
let collector: Collector;
let client: RawClient | undefined;

describe.skipIf(!otelcolHere)(`response id, response model and the summary's cost on chat spans${otelcolNote}`, () => {
  beforeEach(async () => {
    ws = tempWorkspace("hb-otel-resp-");
    fake = new FakeDeepSeek();
    collector = new Collector();
    await collector.start();
  });
  afterEach(async () => {
    await client?.dispose();
    client = undefined;
    await fake.stop();
    await collector.stop();
    ws.cleanup();
  });

  it("sets gen_ai.response.id/model from the stream (cleaned, routed model shown) and prices the summarizing request", async () => {
    const baseUrl = await fake.start();
    const first = `First. ${"a".repeat(6_000)}`;
    const second = `Second. ${"b".repeat(6_000)}`;
    fake.table = {
      [first]: [say("noted", 1_000)],
      [`${first}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUMMARY: a long text of a's", 5_000)],
      // The step retried after the compaction is answered by another model, with a hostile id.
      [second]: [say("answered after the compaction", 2_000, { model: ROUTED, id: HOSTILE_ID })],
    };
    const c = (client = new RawClient({ env: { ...fakeDeepSeekEnv(baseUrl, { HARNESS_MAX_RETRIES: "0" }), OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint } }));
    c.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash", contextWindow: 1_000_000, prices: PRICES });
    expect((await c.response(1)).error).toBeUndefined();
    c.request(2, "session/prompt", promptParams("s", first));
    expect((await c.response(2)).result.status).toBe("ok");
    // The next request no longer fits: refused, summarized, retried (as e2e-compaction-deepseek.test.ts).
    fake.contextWindow = requestTokens(fake.requests[0] as never).messages + 1_000;
    c.request(3, "session/prompt", promptParams("s", second));
    expect((await c.response(3)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(fake.contextRefusals).toBe(1);
    expect(fake.problems).toEqual([]);
    const turnEnd = c.events("s").filter((e) => e.type === "turn/end")[1];
    c.request(4, "shutdown");
    await c.response(4);
    expect((await c.exited).code).toBe(0);

    // Turn 1: invoke_agent + chat; turn 2: invoke_agent + the refused chat, the summary's, the retry's.
    const spans = await collector.waitForSpans(6);
    const turns = spans.filter((s) => s.name === "invoke_agent harness-bridge");
    const turn2 = turns.find((s) => s.attributes["harness.turn"] === 2)!;
    const chats = spans.filter((s) => s.name === "chat deepseek-flash");
    const under = (turn: ReceivedSpan) => chats.filter((s) => s.parentSpanId === turn.spanId);
    const [plain] = under(turns.find((s) => s.attributes["harness.turn"] === 1)!);
    const summary = under(turn2).find((s) => s.attributes["harness.compaction"] === true)!;
    const [refused, retried] = under(turn2).filter((s) => s.attributes["harness.compaction"] === undefined);
    for (const s of chats) expect(s.attributes["gen_ai.request.model"]).toBe("deepseek-flash");

    // The model the fake names is the request's (DeepSeek echoes it); one id for the whole completion.
    const sent = fake.requests.map((r) => r.model);
    expect(plain.attributes["gen_ai.response.model"]).toBe(sent[0]);
    expect(plain.attributes["gen_ai.response.id"]).toMatch(/^chatcmpl-fake-\d+$/);
    expect(summary.attributes["gen_ai.response.model"]).toBe(sent[2]);
    expect(summary.attributes["gen_ai.response.id"]).toMatch(/^chatcmpl-fake-\d+$/);
    expect(summary.attributes["gen_ai.response.id"]).not.toBe(plain.attributes["gen_ai.response.id"]);
    // Refused with an HTTP 400: no stream, nothing answered.
    expect(refused.attributes["gen_ai.response.id"]).toBeUndefined();
    expect(refused.attributes["gen_ai.response.model"]).toBeUndefined();
    // A gateway's routing shows; the hostile id keeps only its printable text, cut.
    expect(retried.attributes["gen_ai.response.model"]).toBe(ROUTED);
    const id = String(retried.attributes["gen_ai.response.id"]);
    expect(id).toBe(`resp-[31mred${"x".repeat(MAX_SERVER_LABEL - "resp-[31mred".length)}`);
    expect(id).not.toMatch(/[\p{C}]/u);

    // The summary is priced like the turn's steps, so the turn's span cost is its turn/end's.
    const cost = (prompt: number) => withCost({ inputTokens: prompt, outputTokens: 100 }, PRICES)!.costUsd;
    expect(summary.attributes["harness.usage.cost_usd"]).toBe(cost(5_000));
    expect(retried.attributes["harness.usage.cost_usd"]).toBe(cost(2_000));
    expect(turnEnd.data.usage.costUsd).toBe(roundUsd(cost(5_000)! + cost(2_000)!));
    expect(turn2.attributes["harness.usage.cost_usd"]).toBe(turnEnd.data.usage.costUsd);
  });
});
