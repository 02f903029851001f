/**
 * The DeepSeek provider end to end through the built binary, against a local DeepSeek-format
 * server: a model that uses every built-in tool and a subagent over HTTP, and the faults — each
 * ends the turn with `{status: "error", reason: {kind: "model-error", …}}` in bounded time, the
 * bridge keeps serving, and the next prompt on the same session works (its history, partial
 * messages of the failed turn included, is accepted by the server).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import type { ServerTable } from "../support/fake-deepseek.js";
import { promptParams } from "../support/raw-client.js";

// The idle timeout ends the stall case; it is long enough that a bridge stalled by a busy
// machine does not time out a reply that is streaming.
const bridge = useDeepSeekBridge("hb-faults-", { HARNESS_MAX_RETRIES: "1", HARNESS_RETRY_BASE_MS: "10", HARNESS_IDLE_TIMEOUT_MS: "2500" });
const { server } = bridge;

const say = (text: string) => [{ delta: { role: "assistant", content: text } }, { delta: {}, finish_reason: "stop" }, { usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }];

const RECOVERY: ServerTable = { "Are you still there?": [{ events: say("Still here.") }] };

const cases: Array<[string, ServerTable[string], Record<string, unknown>]> = [
  [
    "401: the key was refused, no retry",
    [{ status: 401, body: { error: { message: "Authentication Fails", type: "authentication_error" } } }],
    { httpStatus: 401, code: "auth", message: expect.stringMatching(/refused/i) },
  ],
  [
    "500 twice: retried once, then given up with the status",
    [{ status: 500, body: { error: { message: "overloaded" } } }],
    { httpStatus: 500, code: "http", message: expect.stringMatching(/overloaded.*gave up after 1 retry/) },
  ],
  [
    "a connection reset after output: no retry",
    [{ events: [{ delta: { role: "assistant", content: "Half an ans" } }], reset: true }],
    { code: expect.stringMatching(/network|stream/) },
  ],
  [
    "garbage lines, then a stream that ends without a finish",
    [{ events: [{ raw: "data: {not json\n\n" }, { raw: "what is this\n\n" }, { delta: { role: "assistant", content: "partial" } }] }],
    { code: "stream" },
  ],
  ["a stream that stalls after output: idle timeout", [{ events: [{ delta: { role: "assistant", content: "thinking…" } }], stall: true }], { code: "timeout" }],
];

/** One streamed tool call per step, its arguments split in two fragments, with reasoning first. */
const callStep = (id: string, name: string, args: object) => {
  const json = JSON.stringify(args);
  const half = Math.floor(json.length / 2);
  return {
    events: [
      { delta: { role: "assistant", content: null, reasoning_content: `Next: ${name}.` } },
      { delta: { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: json.slice(0, half) } }] } },
      { delta: { tool_calls: [{ index: 0, function: { arguments: json.slice(half) } }] } },
      { delta: {}, finish_reason: "tool_calls" },
    ],
  };
};

describe("a DeepSeek-format model using the built-in tools over HTTP", () => {
  it("writes, edits, reads, searches, runs a command and delegates to a subagent", async () => {
    const c = await bridge.start();
    const task = "Count the lines of app.py.";
    server.table = {
      "Build it.": [
        callStep("c1", "write_file", { path: "pkg/app.py", content: "print('hi')\nprint('bye')\n" }),
        callStep("c2", "edit_file", { path: "pkg/app.py", oldText: "bye", newText: "ciao" }),
        callStep("c3", "read_file", { path: "pkg/app.py" }),
        callStep("c4", "glob", { pattern: "**/*.py" }),
        callStep("c5", "grep", { pattern: "ciao", path: "pkg" }),
        callStep("c6", "bash", { command: "python3 pkg/app.py || echo no-python" }),
        callStep("c7", "task", { prompt: task, description: "counter" }),
        { events: say("All done.") },
      ],
      [task]: [callStep("k1", "bash", { command: "wc -l < pkg/app.py" }), { events: say("It has 2 lines.") }],
    };
    c.request("p", "session/prompt", promptParams("tools-over-http", "Build it."));
    expect((await c.response("p", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(fs.readFileSync(path.join(bridge.dir, "pkg/app.py"), "utf8")).toBe("print('hi')\nprint('ciao')\n");
    const results = c.events("tools-over-http").filter((e) => e.type === "tool/result").map((e) => e.data);
    expect(results.map((r) => [r.name, r.isError])).toEqual([
      ["write_file", false],
      ["edit_file", false],
      ["read_file", false],
      ["glob", false],
      ["grep", false],
      ["bash", false],
      ["task", false],
    ]);
    const textOf = (r: { content: Array<{ text: string }> }) => r.content.map((b) => b.text).join("");
    expect(textOf(results[2])).toBe("1\tprint('hi')\n2\tprint('ciao')");
    expect(textOf(results[3])).toBe("pkg/app.py");
    expect(textOf(results[4])).toBe("pkg/app.py:2:print('ciao')");
    expect(textOf(results[6])).toBe("It has 2 lines.");
    expect(server.problems).toEqual([]);
  });
});

describe("deepseek faults through the binary", () => {
  it.each(cases)("%s → model-error; the next prompt on the session works", async (name, entries, reason) => {
    const c = await bridge.start();
    server.table = { [name]: entries, ...RECOVERY };
    const session = `s-${cases.findIndex(([n]) => n === name)}`;
    c.request("fault", "session/prompt", promptParams(session, name));
    const fault = await c.response("fault", 15_000);
    expect(fault.result).toEqual({ status: "error", reason: { kind: "model-error", message: expect.any(String), ...reason } });
    const events = c.events(session);
    expect(events.at(-1)).toMatchObject({ type: "turn/end", data: { reason: fault.result.reason } });

    c.request("again", "session/prompt", promptParams(session, "Are you still there?"));
    expect((await c.response("again", 15_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const last = c.events(session).filter((e) => e.type === "assistant/message").at(-1);
    expect(last.data.content).toEqual([{ type: "text", text: "Still here." }]);
    expect(server.problems).toEqual([]);
    expect(c.badLines).toEqual([]);
  });
});
