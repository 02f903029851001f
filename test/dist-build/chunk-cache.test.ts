/**
 * The chunks' code caches (scripts/chunk-cache.cjs, src/server/chunk.ts), and the main bundle's
 * (scripts/start-up-cache.cjs, src/sea-main.ts), are used, not silently
 * rejected: V8 rejects a cache made under other flags or another V8, and the chunk then compiles
 * from source, slower but with the same behaviour, so only these checks would notice. The build is
 * the one test/support/build-once.ts made for this run; scripts/vitest runs the pinned node, the
 * one the binary embeds.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RawClient, ROOT, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const build = path.join(ROOT, "build");
const seaConfig = JSON.parse(fs.readFileSync(path.join(build, `sea-config-${process.arch}.json`), "utf8")) as { execArgv: string[]; assets: Record<string, string> };
const chunks = Object.keys(seaConfig.assets).filter((asset) => asset.endsWith(".cjs"));

let ws: TempWorkspace | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws?.cleanup();
});

/**
 * The size of `chunk`'s embedded code cache, whether the embedded node under the binary's flags
 * accepts it, and the size of a cache made by compiling the chunk alone. That source is one byte
 * longer: the same text would be a hit in V8's own compilation cache of the process, and give
 * the embedded cache's functions back.
 */
function cacheSizes(chunk: string): { rejected: boolean; embedded: number; compiled: number } {
  const sizes = `const fs = require("node:fs"), vm = require("node:vm");
    const [chunk, cache] = process.argv.slice(1);
    const code = fs.readFileSync(chunk, "utf8");
    const embedded = fs.readFileSync(cache);
    const script = new vm.Script(code, { filename: chunk, cachedData: embedded });
    const compiled = new vm.Script(code + " ", { filename: "compiled-only.cjs" }).createCachedData();
    console.log(JSON.stringify({ rejected: script.cachedDataRejected, embedded: embedded.length, compiled: compiled.length }));`;
  const run = spawnSync(process.execPath, [...seaConfig.execArgv, "-e", sizes, chunk, seaConfig.assets[`${chunk}.cache`]!], { cwd: build, encoding: "utf8" });
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout) as { rejected: boolean; embedded: number; compiled: number };
}

describe("the chunks' code caches", () => {
  it("are embedded for every chunk and accepted by the embedded node under the binary's flags", () => {
    expect(chunks).toEqual(expect.arrayContaining(["http-client.cjs", "schemas.cjs", "packages.cjs", "mcp-client.cjs", "tracing.cjs", "viewer.cjs"]));
    const check = `const fs = require("node:fs"), vm = require("node:vm");
      for (const [chunk, cache] of JSON.parse(process.argv[1])) {
        const script = new vm.Script(fs.readFileSync(chunk, "utf8"), { filename: chunk, cachedData: fs.readFileSync(cache) });
        console.log(chunk, script.cachedDataRejected ? "rejected" : "accepted");
      }`;
    const pairs = chunks.map((chunk) => [chunk, seaConfig.assets[`${chunk}.cache`]]);
    expect(pairs.every(([, cache]) => cache !== undefined)).toBe(true);
    const run = spawnSync(process.execPath, [...seaConfig.execArgv, "-e", check, JSON.stringify(pairs)], { cwd: build, encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim().split("\n")).toEqual(chunks.map((chunk) => `${chunk} accepted`));
  });

  it("hold, for the main bundle, the functions its start-up run compiled, not only what compiling it compiles", () => {
    // The SEA's main is the small entry; the bundle is evaluated from its asset with this cache.
    const main = JSON.parse(fs.readFileSync(path.join(build, `sea-config-${process.arch}.json`), "utf8")).main as string;
    expect(fs.readFileSync(path.join(build, main), "utf8")).toContain('"harness-bridge.sea.cjs"');
    expect(chunks).toContain("harness-bridge.sea.cjs");
    const { rejected, embedded, compiled } = cacheSizes("harness-bridge.sea.cjs");
    expect(rejected).toBe(false);
    // The start-up path's functions add to the cache what compiling alone leaves out.
    expect(embedded).toBeGreaterThan(compiled * 1.2);
  });

  it("hold, for the agent chunk, the functions a first turn compiled in the start-up run", () => {
    // The agent chunk takes modules from the main bundle, so only the start-up run can evaluate it.
    expect(chunks).toContain("agent.cjs");
    const { rejected, embedded, compiled } = cacheSizes("agent.cjs");
    expect(rejected).toBe(false);
    expect(embedded).toBeGreaterThan(compiled * 1.3);
  });

  it("are accepted by the binary: a turn that loads the schemas, the tools' packages and the HTTP client warns of none", async () => {
    ws = tempWorkspace("hb-chunk-cache-");
    ws.file("a.txt", "hello\n");
    const script = ws.script("grep.json", { turns: [{ steps: [{ toolCalls: [{ name: "grep", arguments: { pattern: "hel+o" } }, { name: "glob", arguments: { pattern: "*.txt" } }] }, { text: "done" }] }] });
    const scripted = new RawClient({ args: ["--stdio", "--no-session-log"] });
    clients.push(scripted);
    scripted.request("init", "initialize", initParams(ws.dir, script));
    expect((await scripted.response("init")).result).toBeDefined();
    scripted.request("p", "session/prompt", promptParams("s"));
    expect((await scripted.response("p")).result).toMatchObject({ status: "ok" });
    expect(scripted.events("s").filter((e) => e.type === "tool/result").map((e) => e.data.isError)).toEqual([false, false]);
    expect(await scripted.finalStderr()).toBe("");

    // Port 9 is one fetch refuses to connect to: the HTTP client loads, the request fails at once.
    const env = { ...process.env, DEEPSEEK_API_KEY: "sk-test-not-a-real-key", DEEPSEEK_BASE_URL: "http://127.0.0.1:9" };
    const deepseek = new RawClient({ args: ["--stdio", "--no-session-log"], env });
    clients.push(deepseek);
    deepseek.request("init", "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-flash", modelRequestTimeoutMs: 1000 });
    expect((await deepseek.response("init")).result).toBeDefined();
    deepseek.request("p", "session/prompt", promptParams("s"));
    expect((await deepseek.response("p")).result).toMatchObject({ status: "error" });
    // Not retried (a refused port stays refused): the turn's end says why, the log says nothing.
    expect(deepseek.events("s").find((e) => e.type === "turn/end")?.data.reason.message).toContain("bad port");
    expect(await deepseek.finalStderr()).not.toMatch(/code cache|Warning/);
  });
});
