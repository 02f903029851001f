/**
 * Hooks end to end, how a wait ends (PROTOCOL.md "Turn control", docs/PROTOCOL.md "Hooks"): the
 * answers refused (unknown, another session's, answered twice, of another kind, a field the hook
 * does not take), no answer (deadline, end of input) as a recorded skip, cancel while a hook
 * waits (no decision), and a session resumed after the bridge died while a hook waited.
 */
import { describe, expect, it } from "vitest";
import { hookKit } from "../support/hook-kit.js";
import { promptParams } from "../support/raw-client.js";
import { oneTurn, turns } from "../support/scripts.js";

const kit = hookKit("hb-hooks-waits-");
const { initialized, event, ofType, types, hook, sessionRoot } = kit;

describe("answers nobody waits for", () => {
  it("unknown, another session's, answered twice: -32602 unknown-hook; the hook still waits for the right answer", async () => {
    const c = await initialized(turns([{ text: "done" }]), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "hook/request");
    c.request("unknown", "session/hook", hook("s", "hook_nope"));
    expect((await c.response("unknown")).error).toMatchObject({ code: -32602, data: { kind: "unknown-hook", hookId: "hook_nope" } });
    c.request("other", "session/hook", hook("other-session", data.hookId, { continue: "x" }));
    expect((await c.response("other")).error).toMatchObject({ code: -32602, data: { kind: "unknown-hook", sessionId: "other-session" } });
    expect(ofType(c, "s", "hook/decision")).toEqual([]);
    c.request("ok", "session/hook", hook("s", data.hookId));
    expect((await c.response("ok")).result).toEqual({});
    c.request("again", "session/hook", hook("s", data.hookId));
    expect((await c.response("again")).error).toMatchObject({ code: -32602, data: { kind: "unknown-hook" } });
    expect((await c.response("p")).result.status).toBe("ok");
  });

  it("a field the hook does not take, a misspelled field or an empty continue is -32602, and the hook still waits", async () => {
    const c = await initialized(turns([{ text: "done" }]), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "hook/request");
    c.request("block", "session/hook", hook("s", data.hookId, { block: "no" }));
    const refused = await c.response("block");
    expect(refused.error).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
    expect(refused.error?.message).toContain("params.block");
    c.request("typo", "session/hook", hook("s", data.hookId, { continu: "go on" }));
    expect((await c.response("typo")).error?.code).toBe(-32602);
    c.request("empty", "session/hook", hook("s", data.hookId, { continue: "" }));
    expect((await c.response("empty")).error?.message).toContain("params.continue");
    c.request("ok", "session/hook", hook("s", data.hookId));
    expect((await c.response("ok")).result).toEqual({});
    expect((await c.response("p")).result.status).toBe("ok");
  });
});

describe("no answer", () => {
  it("past clientToolTimeoutMs the hook is skipped, the decision says so, and the turn goes on", async () => {
    const c = await initialized(oneTurn({ text: "done" }), { hooks: ["stop"], clientToolTimeoutMs: 50 });
    c.request("p", "session/prompt", promptParams("s"));
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const decision = ofType(c, "s", "hook/decision")[0].data;
    expect(decision).toEqual({ hookId: expect.any(String), hook: "stop", skipped: expect.stringContaining("clientToolTimeoutMs") });
  });

  it("end of input skips a waiting hook; the turn settles and the bridge exits 0", async () => {
    const c = await initialized(readPostTool(), { hooks: ["post-tool"] });
    c.request("p", "session/prompt", promptParams("s"));
    await event(c, "s", "hook/request");
    c.child.stdin.end();
    expect((await c.response("p")).result.status).toBe("ok");
    expect(ofType(c, "s", "hook/decision")[0].data.skipped).toContain("closed its input");
    expect(ofType(c, "s", "tool/result")[0].data.content[0].text).toContain("contents of a");
    expect((await c.exit()).code).toBe(0);
  });

  it("cancel while a hook waits: no decision is recorded, the turn is aborted, the session is reusable", async () => {
    const c = await initialized(turns([{ text: "done" }], [{ text: "again" }]), { hooks: ["stop"] });
    c.request("p", "session/prompt", promptParams("s"));
    const { data } = await event(c, "s", "hook/request");
    c.request("c", "session/cancel", { sessionId: "s" });
    expect((await c.response("c")).result).toEqual({ cancelled: true });
    expect((await c.response("p")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
    expect(ofType(c, "s", "hook/decision")).toEqual([]);
    c.request("late", "session/hook", hook("s", data.hookId));
    expect((await c.response("late")).error?.data?.kind).toBe("unknown-hook");
    c.request("p2", "session/prompt", promptParams("s", "two"));
    const next = await event(c, "s", "hook/request", 2);
    c.request("h", "session/hook", hook("s", next.data.hookId));
    expect((await c.response("p2")).result.status).toBe("ok");
    // The abandoned hook is not settled again at the next turn's start: the turn that asked it ended.
    expect(ofType(c, "s", "hook/decision")).toHaveLength(1);
  });
});

function readPostTool() {
  return turns([{ toolCalls: [{ id: "r", name: "read_file", arguments: { path: "a.txt" } }] }, { text: "done" }], [{ text: "resumed" }]);
}

/**
 * A bridge whose turn waits at `hook` is killed (SIGKILL) there; a second bridge on the same
 * session root is started (with `secondHooks`). Returns it and the abandoned hook/request's data.
 */
async function killedWhileHookWaits(hook: string, script: string, secondHooks: string[] = []) {
  const args = ["--stdio", "--session-root", sessionRoot()];
  const first = await initialized({}, { hooks: [hook] }, args, undefined, "scripted", script);
  first.request("p", "session/prompt", promptParams("s", "one"));
  const { data } = await event(first, "s", "hook/request");
  first.kill("SIGKILL");
  await first.exit();
  const second = await initialized({}, secondHooks.length ? { hooks: secondHooks } : {}, args, undefined, "scripted", script);
  return { second, data };
}

describe("a session resumed after the bridge died while a hook waited", () => {
  it("a post-tool hook: recorded as skipped, and the tool's output becomes its result", async () => {
    const { second, data } = await killedWhileHookWaits("post-tool", kit.ws.script("s.json", readPostTool()), ["post-tool"]);
    second.request("late", "session/hook", hook("s", data.hookId));
    expect((await second.response("late")).error?.data?.kind).toBe("unknown-hook");
    second.request("p", "session/prompt", promptParams("s", "two"));
    expect((await second.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const events = second.events("s");
    expect(events.slice(0, 3).map((e) => e.type)).toEqual(["hook/decision", "tool/result", "user/message"]);
    expect(events[0].data).toEqual({ hookId: data.hookId, hook: "post-tool", skipped: expect.stringContaining("bridge stopped") });
    expect(events[1].data).toMatchObject({ callId: "r", isError: false, content: data.content });
  });

  it("a prompt-submit hook: recorded as skipped, and the interrupted prompt stays in the history like any interrupted turn's", async () => {
    const { second, data } = await killedWhileHookWaits("prompt-submit", kit.ws.script("s.json", turns([{ text: "never" }], [{ text: "resumed" }])));
    second.request("p", "session/prompt", promptParams("s", "two"));
    expect((await second.response("p")).result.status).toBe("ok");
    expect(types(second, "s")).toEqual(["hook/decision", "user/message", "turn/start", "step/start", "assistant/message", "turn/end"]);
    expect(second.events("s")[0].data).toEqual({ hookId: data.hookId, hook: "prompt-submit", skipped: expect.stringContaining("bridge stopped") });
    second.request("r", "session/read", { sessionId: "s" });
    const logged = (await second.response("r")).result.events.map((e: any) => e.type);
    expect(logged.filter((t: string) => t === "user/message")).toHaveLength(2);
  });

  it("a rewind of the turn the hook waited in takes the hook with it: the next turn records no decision for it", async () => {
    const { second } = await killedWhileHookWaits("stop", kit.ws.script("s.json", turns([{ text: "done" }], [{ text: "again" }])));
    second.request("rw", "session/rewind", { sessionId: "s", turn: 1, files: false });
    expect((await second.response("rw")).error).toBeUndefined();
    second.request("p", "session/prompt", promptParams("s", "two"));
    expect((await second.response("p")).result.status).toBe("ok");
    expect(ofType(second, "s", "hook/decision")).toEqual([]);
    expect(types(second, "s")[0]).toBe("session/rewound");
  });

  it("a stop hook: recorded as skipped once, and the resumed session goes on", async () => {
    const { second, data } = await killedWhileHookWaits("stop", kit.ws.script("s.json", turns([{ text: "done" }], [{ text: "resumed" }])));
    second.request("p", "session/prompt", promptParams("s", "two"));
    expect((await second.response("p")).result.status).toBe("ok");
    expect(second.events("s")[0]).toMatchObject({ type: "hook/decision", data: { hookId: data.hookId, hook: "stop", skipped: expect.any(String) } });
    expect(ofType(second, "s", "assistant/message")[0].data.content).toEqual([{ type: "text", text: "resumed" }]);
    second.request("p2", "session/prompt", promptParams("s", "three"));
    expect((await second.response("p2")).result.status).toBe("ok");
    expect(ofType(second, "s", "hook/decision")).toHaveLength(1);
  });
});
