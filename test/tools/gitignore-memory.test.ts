/**
 * Through the binary, built-in engine: an untrusted repository's `.gitignore` files, each under
 * the 1 MiB cap, cannot add up past the heap. Each file here holds 34,000 rules that each need a
 * regular expression; the bridge runs with a 256 MiB heap, which a dozen such files, all applied
 * and compiled, exceed (an out-of-memory abort ends every session). The walk applies what its
 * budget allows, says which files it did not apply, and the bridge goes on answering. In one
 * process: the walks under way share one budget, and glob and grep give their share back when
 * the call ends, cancelled or not (else later searches would stop applying `.gitignore`).
 */
import { afterEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { makeCtx, text, useSearchEngine } from "./helpers.js";
import { GitignoreFilter, unappliedNote } from "../../src/tools/gitignore.js";
import { GITIGNORE_ALL_WALKS_HEAP_BYTES, GITIGNORE_WALK_HEAP_BYTES } from "../../src/tools/gitignore-budget.js";

let ws: TempWorkspace | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws?.cleanup();
});

const FOLDERS = 12;
const RULES = 34_000;

/** `*ab?cd*`-style rules: no plain run of three characters, so each is tested, compiled, on every name. */
function wildcardRules(): string {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const rules: string[] = [];
  for (let i = 0; rules.length < RULES; i++) {
    const [a, b, c, d] = [i / 17576, i / 676, i / 26, i].map((n) => letters[Math.floor(n) % 26]);
    rules.push(`*${a}${b}?${c}${d}*`);
  }
  return `${rules.join("\n")}\n`;
}

describe("hostile .gitignore files through the binary (built-in engine)", () => {
  it("are applied up to the walk's budget, the rest named in the result; the bridge stays up", async () => {
    ws = tempWorkspace("hb-gitignore-memory-");
    const rules = wildcardRules();
    for (let i = 0; i < FOLDERS; i++) {
      ws.file(`d${i}/.gitignore`, rules);
      ws.file(`d${i}/kept.js`, "x\n");
      ws.file(`d${i}/aa_aa.js`, "x\n"); // ignored by `*aa?aa*`, wherever its folder's rules apply
    }
    const script = ws.script("glob.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "glob", arguments: { pattern: "**/*.js" } }] }, { text: "listed" }] }],
    });
    const c = new RawClient({ env: { ...process.env, HARNESS_RG: "off", NODE_OPTIONS: "--max-old-space-size=256" } });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, script, { permissionMode: "read-only" }));
    expect((await c.response("init")).result).toBeDefined();
    c.request("p1", "session/prompt", promptParams("s1"));
    const done = await Promise.race([c.response("p1", 120_000), c.exited.then((exit) => ({ exit, stderr: c.stderr.slice(0, 300) }))]);
    expect(done).toMatchObject({ result: { status: "ok" } });

    const result = c.frames.find((f) => f.method === "session.event" && f.params.sessionId === "s1" && f.params.event.type === "tool/result");
    const text: string = result!.params.event.data.content[0].text;
    const note = text.split("\n").at(-1)!;
    expect(note).toMatch(/^\[not applied, past the memory budget of \.gitignore rules \(\d+ MiB a search, \d+ MiB all searches at once\): d\d+\/\.gitignore, d\d+\/\.gitignore, d\d+\/\.gitignore and \d+ more; files these \.gitignore files ignore may be listed\]$/);
    const unapplied = 3 + Number(/and (\d+) more/.exec(note)![1]);
    expect(unapplied).toBeGreaterThan(0);
    expect(unapplied).toBeLessThan(FOLDERS); // some are applied: their aa_aa.js is hidden
    const lines = text.split("\n");
    expect(lines.filter((l) => /^d\d+\/kept\.js$/.test(l))).toHaveLength(FOLDERS);
    expect(lines.filter((l) => /^d\d+\/aa_aa\.js$/.test(l))).toHaveLength(unapplied);

    // The same process answers the next prompt.
    c.request("p2", "session/prompt", promptParams("s2"));
    expect((await c.response("p2", 120_000)).result).toMatchObject({ status: "ok" });
  }, 240_000);
});

/**
 * Rules reckoned at some 115 MiB, most of a walk's budget, that no name here ever reaches (their
 * plain run, `yyy…`, is in no path: never compiled, cheap to parse), then `*aa?aa*`.
 */
function reckonedRules(): string {
  const rule = "*x?yyyyy";
  const count = Math.floor((115 * 1024 * 1024) / (256 + 3072 + 32 * rule.length));
  return `${`${rule}\n`.repeat(count)}*aa?aa*\n`;
}

describe("concurrent walks", () => {
  it("hold their rules within one budget together, given back by close()", async () => {
    ws = tempWorkspace("hb-gitignore-memory-");
    ws.file("big/.gitignore", reckonedRules());
    const hidden = `${ws.dir}/big/aa_aa.js`;
    // Each walk's rules fit its own budget; the walks under way together hold at most a few of them.
    const fit = Math.floor(GITIGNORE_ALL_WALKS_HEAP_BYTES / GITIGNORE_WALK_HEAP_BYTES);
    const walks: GitignoreFilter[] = [];
    const open = async () => {
      const filter = new GitignoreFilter(ws!.dir, true);
      await filter.prepare(`${ws!.dir}/big`, new AbortController().signal);
      walks.push(filter);
      return filter;
    };
    for (let i = 0; i < fit; i++) expect((await open()).isIgnored(hidden, false)).toBe(true);
    const past = await open();
    expect(past.isIgnored(hidden, false)).toBe(false);
    expect(unappliedNote(past)).toMatch(/^\[not applied, past the memory budget of \.gitignore rules \(\d+ MiB a search, \d+ MiB all searches at once\): big\/\.gitignore; /);

    walks[0].close();
    walks[0].close(); // idempotent: gives its share back once
    expect((await open()).isIgnored(hidden, false)).toBe(true);
    expect((await open()).isIgnored(hidden, false)).toBe(false);
    for (const walk of walks) walk.close();
  });
});

describe("a search's share of the budget", () => {
  it("is given back when glob or grep ends, cancelled or not", async () => {
    const undo = await useSearchEngine("builtin");
    try {
      ws = tempWorkspace("hb-gitignore-memory-");
      ws.file("big/.gitignore", reckonedRules());
      ws.file("big/kept.js", "needle\n");
      ws.file("big/aa_aa.js", "needle\n");
      ws.file("big/sub/aa_aa.txt", "needle\n");
      const more = Math.floor(GITIGNORE_ALL_WALKS_HEAP_BYTES / GITIGNORE_WALK_HEAP_BYTES) + 1;
      for (let i = 0; i < more; i++) {
        // Cancelled once the rules above its folder are read.
        const cancelled = new AbortController();
        cancelled.abort();
        await expect(grepTool.execute({ pattern: "needle", path: "big/sub" }, makeCtx(ws.dir, "read-only", cancelled.signal))).rejects.toThrow();
      }
      for (let i = 0; i < more; i++) {
        expect(text(await globTool.execute({ pattern: "**/*.js" }, makeCtx(ws.dir, "read-only")))).toBe("big/kept.js");
        expect(text(await grepTool.execute({ pattern: "needle" }, makeCtx(ws.dir, "read-only")))).toBe("big/kept.js:1:needle");
      }
    } finally {
      undo();
    }
  });
});
