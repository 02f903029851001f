/**
 * A request DeepSeek refuses as longer than the model's context window (its 400, from the fake
 * server): the bridge compacts once (a summarizing request), retries the step once, and the
 * turn completes; a second refusal ends the turn as the model error it is.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import { promptParams } from "../support/raw-client.js";
import { requestTokens } from "../support/server-rules.js";
import { SUMMARIZE_INSTRUCTION } from "../../src/agent/compaction.js";
import { everything } from "../support/mcp-servers.js";

const bridge = useDeepSeekBridge("hb-compact-ds-", { HARNESS_MAX_RETRIES: "0" });
const { server } = bridge;
const say = (text: string, prompt = 5) => ({
  events: [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }, { usage: { prompt_tokens: prompt, completion_tokens: 2, total_tokens: prompt + 2 } }],
});

describe("a context-window refusal", () => {
  it("compacts the older history and retries the request once; the turn completes", async () => {
    const first = `First. ${"a".repeat(6_000)}`;
    const second = `Second. ${"b".repeat(6_000)}`;
    server.table = {
      [first]: [say("noted")],
      [`${first}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUMMARY: the user sent a long text of a's")],
      [second]: [say("answered after the compaction")],
    };
    server.contextWindow = undefined;
    server.contextRefusals = 0;
    const c = await bridge.start({}, undefined, { contextWindow: 1_000_000 });
    c.request("p1", "session/prompt", promptParams("s", first));
    expect((await c.response("p1")).result.status).toBe("ok");
    // The next request (both long prompts) no longer fits; one with the summary instead of the first does.
    server.contextWindow = requestTokens(server.requests[0] as any).messages + 1_000;
    c.request("p2", "session/prompt", promptParams("s", second));
    expect((await c.response("p2")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(server.contextRefusals).toBe(1);
    expect(server.problems).toEqual([]);
    const [compacted] = c.events("s").filter((e) => e.type === "context/compacted");
    expect(compacted.data).toMatchObject({ summary: "SUMMARY: the user sent a long text of a's", trigger: "refused", turn: 2 });
    // refused request, summarizing request (tool_choice none), the retry
    const [refused, summarizing, retry] = server.requests.slice(1);
    expect(refused.messages.some((m) => m.content === first)).toBe(true);
    expect(summarizing.tool_choice).toBe("none");
    expect(retry.messages.some((m) => m.content === first)).toBe(false);
    expect(String(retry.messages[1].content)).toContain("SUMMARY: the user sent a long text of a's");
    // One step: the retry has no step/start of its own.
    expect(c.events("s").filter((e) => e.type === "step/start" && e.data.turn === 2)).toHaveLength(1);
    expect(c.events("s").filter((e) => e.type === "assistant/message").at(-1).data.content).toEqual([{ type: "text", text: "answered after the compaction" }]);
  });

  it("a request still refused after the compaction ends the turn with DeepSeek's message", async () => {
    const first = `Uno. ${"a".repeat(2_000)}`;
    server.table = { [first]: [say("noted")], [`${first}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUMMARY")] };
    server.contextWindow = undefined;
    server.contextRefusals = 0;
    const c = await bridge.start({}, undefined, { contextWindow: 1_000_000 });
    c.request("p1", "session/prompt", promptParams("s", first));
    await c.response("p1");
    server.contextWindow = requestTokens(server.requests[0] as any).messages + 100;
    c.request("p2", "session/prompt", promptParams("s", `Dos. ${"b".repeat(4_000)}`));
    const { result } = await c.response("p2");
    expect(result.status).toBe("error");
    expect(result.reason).toMatchObject({ kind: "model-error", httpStatus: 400, code: "context-window" });
    expect(result.reason.message).toContain("This model's maximum context length is");
    expect(server.contextRefusals).toBe(2);
    expect(c.events("s").filter((e) => e.type === "context/compacted")).toHaveLength(1);
  });
});

describe("a second compaction", () => {
  it("replaces the first summary (one summary first, the kept history after it), the same live and after a restart", async () => {
    const long = (tag: string, n: number, ch: string) => `${tag} ${ch.repeat(n)}`;
    const [u1, u2, u3, u4] = ["U1 short", long("U2", 2_000, "x"), long("U3", 90, "y"), long("U4", 850, "z")];
    server.table = {
      [u1]: [say("A1")],
      [u2]: [say(long("A2", 90, "b"))],
      [u3]: [say(long("A3", 90, "c"))],
      [u4]: [say("A4")],
      [`${u2}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUM-ONE")],
      [`${u3}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUM-TWO")],
      U5: [say("A5")],
      U6: [say("A6")],
    };
    server.contextWindow = undefined;
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-compact2-"));
    try {
      // A small window keeps little verbatim (a quarter of it): each compaction keeps only the last exchanges.
      const init = { contextWindow: 1_024, compactAt: 1, thinking: "disabled" };
      const a = await bridge.start({}, ["--stdio", "--session-root", root], init);
      let n = 0;
      const prompt = async (c: typeof a, text: string) => {
        c.request(`p${++n}`, "session/prompt", promptParams("s", text));
        expect((await c.response(`p${n}`)).result.status).toBe("ok");
      };
      const compact = async (c: typeof a) => {
        c.request(`c${++n}`, "session/compact", { sessionId: "s" });
        expect((await c.response(`c${n}`)).result).toEqual({ compacted: true });
      };
      await prompt(a, u1);
      await prompt(a, u2);
      await prompt(a, u3);
      await compact(a);
      await prompt(a, u4);
      await compact(a);
      const [first, second] = a.events("s").filter((e) => e.type === "context/compacted");
      // The second keeps a message that the first kept too: it comes before the first's own event.
      expect(second.data.keptFromSeq).toBeLessThan(first.seq);
      await prompt(a, "U5");
      const shape = (body: any) => body.messages.slice(1).map((m: any) => (String(m.content).startsWith("[Earlier conversation") ? `summary: ${String(m.content).split("\n\n")[1]}` : String(m.content).split(" ")[0]));
      expect(shape(server.requests.at(-1))).toEqual(["summary: SUM-TWO", "A3", "U4", "A4", "U5"]);
      a.request("bye", "shutdown");
      await a.response("bye");
      const b = await bridge.start({}, ["--stdio", "--session-root", root], init);
      await prompt(b, "U6");
      expect(shape(server.requests.at(-1))).toEqual(["summary: SUM-TWO", "A3", "U4", "A4", "U5", "A5", "U6"]);
      expect(server.problems).toEqual([]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("session/compact's summarizing request", () => {
  it("offers the tools a turn offers, MCP servers' included (the provider's prefix cache serves it)", async () => {
    const first = `Long. ${"a".repeat(3_000)}`;
    server.table = { [first]: [say("noted")], [`${first}\n${SUMMARIZE_INSTRUCTION}`]: [say("SUMMARY: a's")] };
    server.contextWindow = undefined;
    const c = await bridge.start({}, ["--stdio", "--no-session-log"], { mcpServers: { everything: everything() }, thinking: "disabled" });
    c.request("p", "session/prompt", promptParams("s", first));
    expect((await c.response("p", 30_000)).result.status).toBe("ok");
    c.request("c", "session/compact", { sessionId: "s" });
    expect((await c.response("c", 30_000)).result).toEqual({ compacted: true });
    const names = (body: any) => body.tools.map((t: any) => t.function.name).sort();
    const [turn, summarizing] = server.requests;
    expect(summarizing.tool_choice).toBe("none");
    expect(names(summarizing)).toEqual(names(turn));
    expect(names(summarizing)).toContain("mcp__everything__echo");
  });
});
