/**
 * Through the binary: a pattern that a backtracking engine takes exponential time on (`^(a+)+$`
 * against a long run of `a` ending in `!`) does not freeze the bridge, in read-only mode, on
 * either engine: another session's prompt and a cancel are answered meanwhile.
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
