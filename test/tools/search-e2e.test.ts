/**
 * Through the binary: a pattern that a backtracking engine takes exponential time on (`^(a+)+$`
 * against a long run of `a` ending in `!`) does not freeze the bridge, in read-only mode, on
 * either engine: another session's prompt and a cancel are answered meanwhile. And, built-in
 * engine: a glob whose pattern reaches outside the workspace (full mode: tinyglobby's walk) over
 * one large folder judged by costly `.gitignore` rules runs for seconds, and meanwhile another
 * session's prompt is answered: the walk never holds the bridge's event loop for the folder's
 * length.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { ripgrepHere } from "./helpers.js";

// Without ripgrep the bridge would run the built-in engine in the "ripgrep" case too: skip it
// there (helpers.ts says when; CI requires ripgrep).
const engineEnvs = ([
  ["ripgrep", {}],
  ["builtin", { HARNESS_RG: "off" }],
] as const).filter(([engine]) => engine !== "ripgrep" || ripgrepHere);

let ws: TempWorkspace | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws?.cleanup();
});

const isToolResult = (sessionId: string) => (f: { method?: string; params?: any }) =>
  f.method === "session.event" && f.params.sessionId === sessionId && f.params.event.type === "tool/result";

describe.each(engineEnvs)("a catastrophic grep pattern through the binary (%s engine)", (_engine, env) => {
  it("leaves other sessions and cancel working", async () => {
    ws = tempWorkspace("hb-search-e2e-");
    ws.file("aaa.txt", `${"a".repeat(60)}!\n${"a".repeat(100_000)}!\n`);
    for (let i = 0; i < 200; i++) ws.file(`many/f${i}.txt`, `${"a".repeat(2000)}!\n`);
    const script = ws.script("grep.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "grep", arguments: { pattern: "^(a+)+$" } }] }, { text: "searched" }] }],
    });
    const c = new RawClient({ env: { ...process.env, ...env } });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, script, { permissionMode: "read-only" }));
    expect((await c.response("init")).result).toBeDefined();

    c.request("p1", "session/prompt", promptParams("s1"));
    c.request("p2", "session/prompt", promptParams("s2"));
    c.request("cancel", "session/cancel", { sessionId: "s1" });
    const cancel = await c.response("cancel", 10_000);
    expect(cancel.error).toBeUndefined();
    const p1 = await c.response("p1", 10_000);
    expect(["ok", "aborted"]).toContain(p1.result.status);
    const p2 = await c.response("p2", 10_000);
    expect(p2.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const result = await c.waitFrame(isToolResult("s2"), "s2's grep result", 10_000);
    expect(JSON.stringify(result.params.event)).toMatch(/No matches for \/\^\(a\+\)\+\$\//);
  }, 30_000);
});


describe("a glob over a large folder under costly .gitignore rules (built-in engine, full mode)", () => {
  it("leaves another session's prompt answered before it ends", async () => {
    ws = tempWorkspace("hb-search-loop-");
    // Rules no index holds, whose characters are all in every name `file<i>.txt`, never in order.
    ws.file(".gitignore", Array.from({ length: 2000 }, (_, i) => `*x${"?".repeat(1 + (i % 40))}f*${"?".repeat(Math.floor(i / 40))}`).join("\n") + "\n");
    for (let i = 0; i < 1500; i++) ws.file(`big/file${i}.txt`, "");
    // Each session's n-th prompt plays turn n: s1's second prompt globs, s2's first only answers,
    // in ten chunks 50 ms apart (so its turn needs many turns of the loop, not one).
    const script = ws.script("glob.json", {
      turns: [{ steps: [{ text: "ready ready", chunkSize: 1, delayMs: 50 }] }, { steps: [{ toolCalls: [{ name: "glob", arguments: { pattern: `${ws.dir}/big/**` } }] }, { text: "listed" }] }],
    });
    const c = new RawClient({ env: { ...process.env, HARNESS_RG: "off" } });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, script, { permissionMode: "full" }));
    expect((await c.response("init")).result).toBeDefined();
    c.request("p1a", "session/prompt", promptParams("s1"));
    expect((await c.response("p1a", 30_000)).result).toMatchObject({ status: "ok" });

    c.request("p1", "session/prompt", promptParams("s1"));
    const globCall = (f: { method?: string; params?: any }) =>
      f.method === "session.event" && f.params.sessionId === "s1" && f.params.event.type === "assistant/message" && f.params.event.data.turn === 2;
    await c.waitFrame(globCall, "s1's glob call", 30_000);
    c.request("p2", "session/prompt", promptParams("s2"));
    const p2 = await c.response("p2", 120_000);
    expect(p2.result).toMatchObject({ status: "ok" });
    // s2's whole turn ran while s1's glob was still walking.
    expect(c.frames.some(isToolResult("s1"))).toBe(false);
    const result = await c.waitFrame(isToolResult("s1"), "s1's glob result", 120_000);
    expect(JSON.stringify(result.params.event)).toContain("big/file0.txt");
    expect((await c.response("p1", 120_000)).result).toMatchObject({ status: "ok" });
  }, 300_000);
});
