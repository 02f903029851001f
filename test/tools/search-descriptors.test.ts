/**
 * Through the binary, under a 256-file descriptor limit: glob and grep over a tree of far more
 * folders than that answer in full on both engines. A search holds only a bounded number of
 * folder descriptors (search/verify.ts `MAX_HELD_DIRS`); holding one per folder ran the bridge
 * out of descriptors and dropped files from the answers without a word. And under a limit too
 * tight for any search, the answer is an error that says so, never a shorter list.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_HELD_DIRS } from "../../src/tools/search/verify.js";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { ripgrepHere } from "./helpers.js";

// Without ripgrep the bridge would run the built-in engine in the "ripgrep" case too: skip it
// there (helpers.ts says when; CI requires ripgrep).
const engineEnvs = ([
  ["ripgrep", {}],
  ["builtin", { HARNESS_RG: "off" }],
] as const).filter(([engine]) => engine !== "ripgrep" || ripgrepHere);

const FD_LIMIT = 256;
const FOLDERS = 600;

let ws: TempWorkspace | undefined;
let client: RawClient | undefined;
afterEach(async () => {
  await client?.dispose();
  client = undefined;
  ws?.cleanup();
});

describe.each(engineEnvs)("glob and grep over %d folders under a %d-descriptor limit (%s engine)".replace("%d", String(FOLDERS)).replace("%d", String(FD_LIMIT)), (_engine, env) => {
  it("answer with every file", async () => {
    expect(MAX_HELD_DIRS).toBeLessThan(FD_LIMIT / 2);
    ws = tempWorkspace("hb-search-fds-");
    for (let i = 0; i < FOLDERS; i++) ws.file(`d${String(i).padStart(3, "0")}/f.txt`, i % 40 === 39 ? "needle\n" : "hay\n");
    const script = ws.script("search.json", {
      turns: [{
        steps: [
          { toolCalls: [{ name: "glob", arguments: { pattern: "**/f.txt" } }] },
          { toolCalls: [{ name: "grep", arguments: { pattern: "needle" } }] },
          { text: "searched" },
        ],
      }],
    });
    client = new RawClient({ command: "prlimit", args: [`--nofile=${FD_LIMIT}`, BINARY, "--stdio"], env: { ...process.env, ...env } });
    client.request("init", "initialize", initParams(ws.dir, script, { permissionMode: "read-only" }));
    expect((await client.response("init")).result).toBeDefined();
    client.request("p", "session/prompt", promptParams("s"));
    expect((await client.response("p", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const results = client.frames
      .filter((f: any) => f.method === "session.event" && f.params.event.type === "tool/result")
      .map((f: any) => f.params.event.data);
    expect(results.map((r: any) => [r.name, r.isError])).toEqual([["glob", false], ["grep", false]]);
    const globbed = results[0].content[0].text.split("\n").filter((l: string) => l.endsWith("f.txt"));
    expect(globbed).toHaveLength(FOLDERS);
    const grepped = results[1].content[0].text.split("\n").filter((l: string) => l.endsWith(":needle"));
    expect(grepped).toHaveLength(FOLDERS / 40);
  }, 60_000);
});

describe.each(engineEnvs)("starved of descriptors (%s engine)", (_engine, env) => {
  it("answers in full or with an error that names descriptors, never with files missing", () => {
    ws = tempWorkspace("hb-search-starved-");
    for (let i = 0; i < 100; i++) ws.file(`d${String(i).padStart(2, "0")}/f.txt`, "needle\n");
    ws.file(".gitignore", "*.log\n");
    const script = ws.script("search.json", {
      turns: [{
        steps: [
          { toolCalls: [{ name: "grep", arguments: { pattern: "needle" } }] },
          { toolCalls: [{ name: "glob", arguments: { pattern: "**/f.txt" } }] },
          { text: "searched" },
        ],
      }],
    });
    const input = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: initParams(ws.dir, script, { permissionMode: "read-only" }) },
      { jsonrpc: "2.0", id: 2, method: "session/prompt", params: promptParams("s") },
    ].map((f) => JSON.stringify(f) + "\n").join("");
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-search-starved-root-"));
    const seen = new Set<string>();
    // From too few descriptors to start at all up to enough for everything: whatever the
    // machine's own count at start, the limits in between are the starved ones.
    for (let limit = 12; limit <= 48; limit += 2) {
      const run = spawnSync("prlimit", [`--nofile=${limit}`, BINARY, "--stdio", "--session-root", root], { input, env: { ...process.env, ...env }, timeout: 20_000, encoding: "utf8" });
      const frames = run.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const prompt = frames.find((f) => f.id === 2);
      if (!prompt || prompt.error) {
        // Too few to start, load the script or open the session's log: each a specific error of its own.
        seen.add("no start");
        continue;
      }
      expect(prompt.result, `limit ${limit}`).toEqual({ status: "ok", reason: { kind: "completed" } });
      for (const f of frames.filter((f) => f.method === "session.event" && f.params.event.type === "tool/result")) {
        const { name, isError, content } = f.params.event.data;
        const out: string = content[0].text;
        if (isError) {
          expect(out, `limit ${limit}, ${name}`).toMatch(/ran out of file descriptors/);
          seen.add("error");
        } else {
          const lines = out.split("\n").filter((l) => l.includes("f.txt"));
          expect(lines, `limit ${limit}, ${name}`).toHaveLength(100);
          seen.add("full");
        }
      }
    }
    fs.rmSync(root, { recursive: true, force: true });
    expect([...seen].sort()).toEqual(["error", "full", "no start"]);
  }, 120_000);
});
