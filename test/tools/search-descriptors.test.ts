/**
 * Through the binary, under a 256-file descriptor limit: glob and grep over a tree of far more
 * folders than that answer in full on both engines. A search holds only a bounded number of
 * folder descriptors (search/verify.ts `MAX_HELD_DIRS`); holding one per folder ran the bridge
 * out of descriptors and dropped files from the answers without a word.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MAX_HELD_DIRS } from "../../src/tools/search/verify.js";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const FD_LIMIT = 256;
const FOLDERS = 600;

let ws: TempWorkspace | undefined;
let client: RawClient | undefined;
afterEach(async () => {
  await client?.dispose();
  client = undefined;
  ws?.cleanup();
});

describe.each([
  ["ripgrep", {}],
  ["builtin", { HARNESS_RG: "off" }],
] as const)("glob and grep over %d folders under a %d-descriptor limit (%s engine)".replace("%d", String(FOLDERS)).replace("%d", String(FD_LIMIT)), (_engine, env) => {
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
