/**
 * What the bridge evaluates before it can answer `initialize` is every module reached from
 * src/main.ts by static imports (the agent and MCP halves come later, through `import()`:
 * server/agent-modules.ts, mcp-loader.ts). On that path no module takes `node:fs` or `node:os`
 * as a namespace (`import * as fs`): the CommonJS bundle turns each such import into a copy of
 * every export of the module at load, a share of the start-up measured in bench/README.md
 * ("Cold start"); named imports are plain `require`s.
 *
 * And the main bundle, whose code cache every start of the binary deserializes, holds no npm
 * package: undici (the provider's HTTP client), zod (with the request schemas) and the tools'
 * packages are chunks of their own, evaluated on first use (scripts/build.mjs,
 * src/server/chunk.ts). The build lists the bundle's inputs in build/harness-bridge.meta.json;
 * the bundle is the one test/support/build-once.ts built for this run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./support/raw-client.js";

const SRC = path.resolve(__dirname, "..", "src");
// Value imports and re-exports (not `import type`, not `import()`) of a relative module.
const STATIC = /(?:^|[\n;])\s*(?:import(?!\s+type\b)|export(?!\s+type\b))\b[^;"'`]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|(?:^|[\n;])\s*import\s*["'](\.{1,2}\/[^"']+)["']/g;
const NAMESPACE = /^import \* as \w+ from "node:(fs|os)";$/m;
// A value import of node:stream or node:net (`import type` is erased).
const STREAMS = /^import (?!type\b)[^;]*from "node:(stream|net)";$/m;

/** The .ts files reached from `entry` by static value imports. */
function startupFiles(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const match of fs.readFileSync(file, "utf8").matchAll(STATIC)) {
      const target = path.resolve(path.dirname(file), (match[1] ?? match[2])!.replace(/\.js$/, ".ts"));
      if (fs.existsSync(target)) visit(target);
    }
  };
  visit(entry);
  return [...seen];
}

describe("the start-up path (src/main.ts and what it imports statically)", () => {
  it("takes node:fs and node:os by name, not as namespaces", () => {
    const files = startupFiles(path.join(SRC, "main.ts"));
    expect(files.map((f) => path.relative(SRC, f))).toEqual(expect.arrayContaining(["cli.ts", "server/initialize.ts", "sandbox/probe.ts"]));
    expect(files.map((f) => path.relative(SRC, f))).not.toContain("agent/runtime.ts");
    expect(files.filter((f) => NAMESPACE.test(fs.readFileSync(f, "utf8"))).map((f) => path.relative(SRC, f))).toEqual([]);
  });

  it("does not load node:stream or node:net: on pipes the first request is answered before they are (transport/stdio.ts)", () => {
    const files = startupFiles(path.join(SRC, "main.ts"));
    expect(files.map((f) => path.relative(SRC, f))).toContain("transport/stdio.ts");
    expect(files.filter((f) => STREAMS.test(fs.readFileSync(f, "utf8"))).map((f) => path.relative(SRC, f))).toEqual([]);
  });
});

/** The entries of the chunks that hold npm packages or run rarely (scripts/build.mjs `chunks`). */
const CHUNK_ENTRIES = ["src/providers/openai-compatible/http-client.ts", "src/protocol/schemas.ts", "src/tools/packages.ts", "src/mcp/index.ts", "src/tracing/index.ts", "src/viewer/index.ts"];

describe("the main bundle", () => {
  it("holds no npm package, none of the chunks' entries and none of the agent chunk's modules", () => {
    const inputs = JSON.parse(fs.readFileSync(path.join(ROOT, "build", "harness-bridge.meta.json"), "utf8")) as string[];
    expect(inputs).toEqual(expect.arrayContaining(["src/main.ts", "src/server/chunk.ts", "src/providers/openai-compatible/provider.ts"]));
    expect(inputs.filter((input) => !input.startsWith("src/"))).toEqual([]);
    for (const entry of CHUNK_ENTRIES) {
      expect(inputs).not.toContain(entry);
    }
    // The agent half is a chunk too (server/agent-modules.ts), which takes every module it shares from the main bundle.
    const agent = JSON.parse(fs.readFileSync(path.join(ROOT, "build", "agent.meta.json"), "utf8")) as string[];
    expect(agent).toEqual(expect.arrayContaining(["src/agent/runtime.ts", "src/agent/store/file-store.ts", "src/tools/registry.ts", "src/tools/bash.ts"]));
    expect(inputs).not.toContain("src/agent/runtime.ts");
    expect(agent.filter((input) => inputs.includes(input))).toEqual([]);
    // Nor does it hold another chunk's entry: that chunk would be copied into it.
    for (const entry of CHUNK_ENTRIES) {
      expect(agent).not.toContain(entry);
    }
    const main = fs.readFileSync(path.join(ROOT, "build", "harness-bridge.cjs"), "utf8");
    // node:os is not loaded at start-up (temp-folder.ts): the main bundle does not require it.
    expect(main).not.toContain('require("node:os")');
    // And the chunks hold the packages: undici's and zod's own strings are there, not in the bundle.
    for (const [chunk, marker] of [["http-client.cjs", "llhttp"], ["schemas.cjs", "$ZodError"], ["packages.cjs", "RE2JSSyntaxException"], ["packages.cjs", "strictTuples"]]) {
      expect(fs.readFileSync(path.join(ROOT, "build", chunk!), "utf8")).toContain(marker);
      expect(main).not.toContain(marker);
    }
  });
});
