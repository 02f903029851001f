/**
 * MCP tool names end to end, through the built binary, with a real server process
 * (test/fixtures/mcp_names_server.mjs, which lists exactly the names it is given in the order
 * given): a tool named `a/b` beside a tool literally named like its rewrite (`a_b-<hash>`). The
 * name a tool gets must be a function of its own name only (PROTOCOL.md "MCP servers", Tools):
 * what initialize offers, what a call of the contested name does and what the user is told
 * must be the same whatever the order of tools/list, and a tools/list_changed must never
 * silently give a name that ran one tool to another.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/protocol/index.js";
import { offeredName } from "../../src/mcp/names.js";
import { RawClient, ROOT, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

const SERVER = path.join(ROOT, "test", "fixtures", "mcp_names_server.mjs");
/** The rewritten name of `a/b` on server `m`, and the tool named literally like it. */
const REWRITTEN = offeredName("m", "a/b");
const LITERAL = REWRITTEN.slice("mcp__m__".length);

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-mcp-names-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

const call = (id: string, name: string, args: JsonObject = {}) => ({ id, name, arguments: args });
const text = (result: any): string => result.content.map((b: any) => b.text).join("");

/** A bridge whose server `m` lists `list` (then `next` after a call of `swap`); calls are logged to `log`. */
async function bridge(script: string, log: string, list: string[], next?: string[]): Promise<{ c: RawClient; init: any }> {
  const env: Record<string, string> = { NAMES_LIST: JSON.stringify(list), NAMES_LOG: log };
  if (next) env.NAMES_NEXT = JSON.stringify(next);
  const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script, { mcpServers: { m: { command: process.execPath, args: [SERVER], env } } }));
  const res = await c.response("init", 30_000);
  expect(res.error).toBeUndefined();
  return { c, init: res.result };
}

/** Runs one prompt; the tool/result events of the session so far, by call id. */
async function prompt(c: RawClient, id: string): Promise<{ status: string; results: Record<string, any> }> {
  c.request(id, "session/prompt", promptParams("s"));
  const response = await c.response(id, 30_000);
  const results: Record<string, any> = {};
  for (const e of c.events("s")) if (e.type === "tool/result") results[e.data.callId] = e.data;
  return { status: response.result?.status, results };
}

const ran = (log: string): string[] => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []);

describe("a tool named like another's rewritten name", () => {
  it("offers, runs and reports the same in every order of tools/list: neither contested tool, with both reasons on stderr", async () => {
    expect(offeredName("m", LITERAL)).toBe(REWRITTEN); // the two really meet
    const script = ws.script("s.json", oneTurn({ toolCalls: [call("contested", REWRITTEN), call("plain", "mcp__m__c")] }, { text: "done" }));
    const orders = [
      ["a/b", LITERAL, "c"],
      [LITERAL, "a/b", "c"],
      ["c", LITERAL, "a/b"],
    ];
    const seen: object[] = [];
    for (const [i, order] of orders.entries()) {
      const log = path.join(ws.dir, `calls-${i}.log`);
      const { c, init } = await bridge(script, log, order);
      const { status, results } = await prompt(c, "p");
      const stderr = await c.stderrMatching(/MCP server m: tools left out[^\n]*\n/);
      const warning = stderr.split("\n").find((l) => l.includes("MCP server m: tools left out")) ?? "";
      // What the user is told: each left-out tool with its reason (listed in the server's order, so sorted here).
      const reasons = (warning.match(/'[^']*' \([^)]*\)/g) ?? []).sort();
      const { durationMs: _d1, ...contested } = results.contested ?? {};
      const { durationMs: _d2, ...plain } = results.plain ?? {};
      seen.push({ init: init.mcpServers, status, contested, plain, ran: ran(log), reasons });
    }
    // Identical whatever the order...
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[2]).toEqual(seen[0]);
    // ...and what it is: only `c` offered and run; the contested name is an unknown tool the model reads.
    const first = seen[0] as any;
    expect(first.init).toEqual([{ name: "m", status: "connected", tools: ["mcp__m__c"] }]);
    expect(first.status).toBe("ok");
    expect(first.plain).toMatchObject({ isError: false, content: [{ type: "text", text: "ran c" }] });
    expect(first.contested.isError).toBe(true);
    const reasons = [`'a/b' (its name ${REWRITTEN} is also the name of '${LITERAL}'; none of them is offered)`, `'${LITERAL}' (its name ${REWRITTEN} is also the name of 'a/b'; none of them is offered)`];
    // The model reads why: the server lists it, the bridge leaves it out (not "no such tool").
    expect(text(first.contested)).toMatch(new RegExp(`^unknown tool '${REWRITTEN}' \\(the MCP server m lists it, but the bridge leaves it out: '`));
    for (const reason of reasons) expect(text(first.contested)).toContain(reason);
    expect(first.ran).toEqual(["call c"]);
    // The user is told why on stderr, with both tools named.
    expect(first.reasons).toEqual(reasons.sort());
  });

  it("after tools/list_changed, the name that ran 'a/b' is not silently given to the tool named like it", async () => {
    const script = ws.script(
      "s.json",
      turns([{ toolCalls: [call("before", REWRITTEN)] }, { toolCalls: [call("swap", "mcp__m__swap")] }, { text: "one" }], [{ toolCalls: [call("after", REWRITTEN)] }, { text: "two" }]),
    );
    const log = path.join(ws.dir, "calls.log");
    const { c, init } = await bridge(script, log, ["a/b", "swap"], [LITERAL, "swap"]);
    expect(init.mcpServers[0].tools).toEqual([REWRITTEN, "mcp__m__swap"]);
    const one = await prompt(c, "p1");
    expect(one.status).toBe("ok");
    expect(text(one.results.before)).toBe("ran a/b");
    expect(text(one.results.swap)).toBe("ran swap");
    const two = await prompt(c, "p2");
    expect(two.status).toBe("ok");
    expect(two.results.after.isError).toBe(true);
    expect(text(two.results.after)).toContain(
      `unknown tool '${REWRITTEN}' (the MCP server m lists it, but the bridge leaves it out: '${LITERAL}' (its name ${REWRITTEN} ran 'a/b' before tools/list_changed; it is not given to another tool))`,
    );
    // The tool named like the rewrite never ran: the name is not remapped.
    expect(ran(log)).toEqual(["call a/b", "call swap"]);
    await c.stderrMatching(`'${LITERAL}' (its name ${REWRITTEN} ran 'a/b' before tools/list_changed; it is not given to another tool)`);
  });
});
