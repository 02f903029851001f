#!/usr/bin/env node
// Builds the single executable: esbuild bundle → SEA blob → a stripped copy of node → postject.
//   node scripts/build.mjs               → bin/harness-bridge and dist/harness-bridge-linux-x64 (+ .sha256)
//   node scripts/build.mjs --arch arm64  → dist/harness-bridge-linux-arm64 (+ .sha256) only; bin/ untouched
// Both embed the pinned Node (package.json `config.embeddedNode`), npm's node-linux-<arch>
// package of that version; the arm64 build runs on an x64 Linux host, its node under
// qemu-aarch64-static to make the blob, binutils-aarch64-linux-gnu's strip (docs/distribution.md).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { pinnedNode, pinnedNodeVersion } from "./pinned-node.mjs";
import { importsFromMain, sharedModulesFilled, sharedPrefix } from "./shared-modules.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fail = (message) => {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
};
// esbuild and postject are devDependencies: a fresh clone has neither until `npm ci`.
const esbuild = await import("esbuild").catch(() => fail("esbuild is not installed: run `npm ci` at the repository root first (or `bash scripts/setup.sh`)"));
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

const args = process.argv.slice(2);
if (!(args.length === 0 || (args.length === 2 && args[0] === "--arch"))) fail(`usage: node scripts/build.mjs [--arch x64|arm64] (got: ${args.join(" ")})`);
const arch = args[1] ?? process.arch;
const native = arch === process.arch;
if (!native && !(arch === "arm64" && process.platform === "linux" && process.arch === "x64")) {
  fail(`--arch ${arch}: this script builds for this machine (${process.platform}-${process.arch}) and linux-arm64 from linux-x64 only`);
}

const buildDir = path.join(root, "build");
const bundle = path.join(buildDir, "harness-bridge.cjs");
const platform = `${process.platform}-${arch}`;
const download = path.join(root, "dist", `harness-bridge-${platform}`);
const exe = native ? path.join(root, "bin", "harness-bridge") : download;
const started = Date.now();
const step = (what) => process.stderr.write(`build: ${what} (${Date.now() - started} ms)\n`);

fs.mkdirSync(buildDir, { recursive: true });
fs.mkdirSync(path.dirname(exe), { recursive: true });
fs.mkdirSync(path.dirname(download), { recursive: true });

// The Landlock helper (scripts/sandbox-helper.mjs, src/sandbox/landlock.ts): compiled for the
// target arch, embedded as the SEA asset `landlock-exec`, and its sha256 compiled into the
// bundle (`__LANDLOCK_HELPER_SHA256__`), which the bridge checks before every exec of it.
const { buildSandboxHelper } = await import("./sandbox-helper.mjs");
const landlockHelper = (() => {
  try {
    return buildSandboxHelper(arch, { buildDir });
  } catch (err) {
    return fail(`the Landlock helper: ${err.message}`);
  }
})();
const landlockAsset = { "landlock-exec": path.relative(buildDir, landlockHelper.file) };
const landlockDefine = { __LANDLOCK_HELPER_SHA256__: JSON.stringify(landlockHelper.sha256) };
step(`Landlock helper ${landlockHelper.size} bytes, sha256 ${landlockHelper.sha256.slice(0, 16)}…`);

// What both bundles share. ESM-only dependencies (fdir, under tinyglobby) call
// createRequire(import.meta.url) at load time; in a CommonJS bundle import.meta is empty, so give
// it this file's URL (the executable's path inside the SEA) instead of crashing the first glob/grep.
// The URL is made when it is read, not as the bundle loads: nothing before the `initialize`
// response reads it, and making it runs node's path normalization over the bundle's path at every
// start, which brings V8's compile of that hot function closer (bench/README.md, "Why the code does this").
const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: `node${pinnedNodeVersion().split(".")[0]}`,
  minify: true,
  legalComments: "none",
  banner: { js: 'var __bundle={get url(){return require("node:url").pathToFileURL(__filename).href}};' },
  logLevel: "warning",
  // Inputs named relative to the root (the metafile, scripts/shared-modules.mjs), wherever the build runs from.
  absWorkingDir: root,
};
const defines = { __HARNESS_VERSION__: JSON.stringify(pkg.version), "import.meta.url": "__bundle.url" };

// Chunks of their own, each loaded only by the runs that need it: the MCP client
// (src/mcp/index.ts, the MCP SDK), by an `initialize` that configures MCP servers
// (src/server/mcp-loader.ts); the tracer (src/tracing/index.ts), when an OTEL variable asks for
// traces (src/server/tracing-loader.ts); the session viewer (src/viewer/index.ts, `harness-bridge
// view`, src/viewer-loader.ts), which --stdio never evaluates, its page's files embedded in it as
// strings (`?raw` imports, the raw-text plugin); the provider's HTTP client (undici and the SSE
// parser, src/providers/openai-compatible/http-client.ts), on the first model request; the
// request schemas with zod (src/protocol/schemas.ts), once `initialize` has answered; the tools'
// npm packages (src/tools/packages.ts: re2js, ignore, tinyglobby, picomatch, Ajv), on the first
// use of any of them. So the main bundle holds no npm package (test/startup-imports.test.ts). In the main
// bundle each one's import stays external and unused, and a define names the chunk to evaluate
// instead (src/server/chunk.ts). A chunk is bundled whole, with its own copy of every module it
// imports: an entry must import no module whose state or classes the main bundle shares (these
// import npm packages and constants only). The agent chunk is the exception: it takes the
// modules it shares with the main bundle from it (scripts/shared-modules.mjs).
const rawText = {
  name: "raw-text",
  setup(build) {
    build.onResolve({ filter: /\?raw$/ }, (args) => ({ path: path.resolve(args.resolveDir, args.path.slice(0, -"?raw".length)), namespace: "raw-text" }));
    build.onLoad({ filter: /.*/, namespace: "raw-text" }, (args) => ({ contents: fs.readFileSync(args.path, "utf8"), loader: "text" }));
  },
};
const chunks = [
  { name: "mcp-client.cjs", entry: path.join("mcp", "index.ts"), importer: path.join("server", "mcp-loader.ts"), specifier: /\/mcp\/index\.js$/, define: "__MCP_CHUNK__" },
  { name: "tracing.cjs", entry: path.join("tracing", "index.ts"), importer: path.join("server", "tracing-loader.ts"), specifier: /\/tracing\/index\.js$/, define: "__TRACING_CHUNK__" },
  { name: "viewer.cjs", entry: path.join("viewer", "index.ts"), importer: "viewer-loader.ts", specifier: /\/viewer\/index\.js$/, define: "__VIEWER_CHUNK__", plugins: [rawText] },
  {
    name: "http-client.cjs",
    entry: path.join("providers", "openai-compatible", "http-client.ts"),
    importer: path.join("providers", "openai-compatible", "provider.ts"),
    specifier: /^\.\/http-client\.js$/,
    define: "__HTTP_CHUNK__",
  },
  { name: "schemas.cjs", entry: path.join("protocol", "schemas.ts"), importer: path.join("server", "params-schemas.ts"), specifier: /\/protocol\/schemas\.js$/, define: "__SCHEMAS_CHUNK__" },
  { name: "packages.cjs", entry: path.join("tools", "packages.ts"), importer: path.join("tools", "packages-loader.ts"), specifier: /^\.\/packages\.js$/, define: "__PACKAGES_CHUNK__" },
  // The agent half, after the `initialize` response (src/server/agent-modules.ts). The one chunk
  // that shares modules with the main bundle (scripts/shared-modules.mjs): built after it, and its
  // code cache made by the start-up run, which has the main bundle to evaluate it with.
  {
    name: "agent.cjs",
    entry: path.join("server", "agent-chunk.ts"),
    importer: path.join("server", "agent-modules.ts"),
    specifier: /^\.\.\/(agent\/runtime|agent\/store\/index|tools\/registry|agent\/final-answer)\.js$/,
    define: "__AGENT_CHUNK__",
    sharesWithMain: true,
  },
];
const chunksExternal = {
  name: "chunks-external",
  setup(build) {
    for (const chunk of chunks) {
      build.onResolve({ filter: chunk.specifier }, (args) => (args.importer.endsWith(chunk.importer) ? { path: args.path, external: true } : undefined));
    }
  },
};
const buildMain = (shared, first) =>
  esbuild.build({
    ...common,
    entryPoints: [path.join(root, "src", "main.ts")],
    outfile: bundle,
    metafile: true,
    define: { ...defines, ...landlockDefine, ...Object.fromEntries(chunks.map((c) => [c.define, JSON.stringify(c.name)])) },
    plugins: [chunksExternal, sharedModulesFilled(esbuild, root, shared, first)],
  });
const inputsOf = (result) => Object.keys(result.metafile.inputs).sort();
const main = await buildMain(new Set());
// What went into the main bundle, for test/startup-imports.test.ts (inputs relative to the root).
fs.writeFileSync(path.join(buildDir, "harness-bridge.meta.json"), `${JSON.stringify(inputsOf(main), null, 1)}\n`);
// A chunk file is one function expression (src/server/chunk.ts): the bytes its code cache is made
// from below are the bytes the bridge compiles.
const chunkWrapper = { head: "(function (exports, require, module, __filename, __dirname) {", tail: "})" };
const shared = new Set();
for (const chunk of chunks) {
  const fromMain = chunk.sharesWithMain ? [importsFromMain(root, new Set(inputsOf(main)), sharedPrefix(root), shared)] : [];
  const built = await esbuild.build({
    ...common,
    entryPoints: [path.join(root, "src", chunk.entry)],
    outfile: path.join(buildDir, chunk.name),
    define: defines,
    plugins: [...(chunk.plugins ?? []), ...fromMain],
    banner: { js: `${chunkWrapper.head}${common.banner.js}` },
    footer: { js: chunkWrapper.tail },
    metafile: chunk.sharesWithMain,
  });
  // What went into a chunk that shares modules with the main bundle: none of the main bundle's (test/startup-imports.test.ts).
  if (chunk.sharesWithMain) fs.writeFileSync(path.join(buildDir, chunk.name.replace(/\.cjs$/, ".meta.json")), `${JSON.stringify(inputsOf(built), null, 1)}\n`);
}
// Again, with the modules the agent chunk takes from it listed (src/server/shared-modules.ts):
// the same inputs, or a module would be in both.
const mainSharing = await buildMain(shared, main);
if (inputsOf(mainSharing).join("\n") !== inputsOf(main).join("\n")) fail("the main bundle's inputs changed when it was built with the modules it shares with the agent chunk");
// The single executable evaluates the main bundle as it does a chunk (src/sea-main.ts, its SEA
// `main`): the same bytes as one function expression, whose code cache is made after a start-up
// run (below). The entry itself is a few lines.
const seaBundle = "harness-bridge.sea.cjs";
fs.writeFileSync(path.join(buildDir, seaBundle), `${chunkWrapper.head}${fs.readFileSync(bundle, "utf8")}${chunkWrapper.tail}`);
const seaMain = "sea-main.cjs";
await esbuild.build({ ...common, banner: {}, entryPoints: [path.join(root, "src", "sea-main.ts")], outfile: path.join(buildDir, seaMain) });
// src/server/chunk.ts reads an embedded file as latin1, which is its UTF-8 only for ASCII text:
// esbuild writes ASCII (it escapes the rest), and this keeps it so.
for (const name of [seaBundle, ...chunks.map((c) => c.name)]) {
  if (!fs.readFileSync(path.join(buildDir, name)).every((byte) => byte < 0x80)) fail(`${name} is not ASCII only: src/server/chunk.ts would read it wrong`);
}
step(`bundle ${fs.statSync(bundle).size} bytes; chunks: ${chunks.map((c) => `${c.name} ${fs.statSync(path.join(buildDir, c.name)).size} bytes`).join(", ")}`);

/**
 * The node to copy, and how to run it (the blob's code cache must come from the target's V8):
 * the pinned one (scripts/pinned-node.mjs, package.json `config.embeddedNode`) for either
 * architecture, never the node running this script, so the shipped runtime does not depend on
 * the build machine.
 */
function targetNode() {
  let node;
  try {
    node = pinnedNode(arch, step);
  } catch (err) {
    fail(err.message);
  }
  if (native) return { node, run: [node], strip: "strip" };
  const qemu = "qemu-aarch64-static";
  return { node, run: [qemu, "-L", "/usr/aarch64-linux-gnu", node], strip: "aarch64-linux-gnu-strip" };
}
const target = targetNode();

// Reproducible: the same commit gives the same bytes, wherever the tree is. The blob records
// `main` as written (so it is relative, made in build/), and its V8 code cache lays out hash
// tables by the process's hash seed, which V8 draws from its random generator: a fixed
// --random-seed fixes both. V8 leaves random_seed out of the flag hash that a code cache is
// checked against, so the cache is still accepted by the binary at run time (a fixed
// --hash-seed is not: it would be rejected, and start-up would lose what the cache saves).
const blob = `sea-prep-${arch}.blob`;
const seaConfig = `sea-config-${arch}.json`;
// V8 flags of the binary. A young generation of one size from the start to the end: with V8's
// 1 MB default the start-up's allocations made a scavenge before the `initialize` response, and a
// young generation that grows makes V8 pretenure the allocation sites of what a session keeps
// only once it is at full size, throwing the turn's optimized code away thousands of turns in;
// at one size that happens in a session's first turns (bench/README.md, "Cold start" and
// "Issue 34, round 6"). The size is 8 MB: 16 halves a long session's scavenges, but every
// process that allocates a while then holds two semi-spaces of 16 MB, and a search's RSS went
// past its goal ("Issue 34, round 17"). Heap sizes stay out of the flag hash a code cache is
// checked against; the blob is made under the same flags all the same: V8 rejects a code cache
// made under flags that change its code (start-up would then parse the whole bundle, and print
// a warning: test/server/e2e-lifecycle.test.ts, "--version").
const seaExecArgv = ["--min-semi-space-size=8", "--max-semi-space-size=8"];
// Each chunk's code cache (scripts/chunk-cache.cjs), made like the blob's: by the target's node,
// under the binary's flags and the fixed seed, named relative to build/. Unlike the blob's, it is
// made after evaluating the chunk, and what an evaluation leaves compiled depends on V8's helper
// threads (concurrent GC ages and flushes bytecode, lazy functions compile in the background):
// --predictable runs all of it on the main thread, so the bytes are the same on every build, and
// V8 leaves it out of the flag hash, so the binary (without it) accepts the cache
// (test/dist-build/ checks both). It also depends on what the evaluation sees of its process: the
// caches differed with stderr a file rather than a pipe, so the run gets no environment and the
// same stdio on every build.
function runCacheScript(script, args) {
  const run = spawnSync(target.run[0], [...target.run.slice(1), "--random-seed=1", "--predictable", ...seaExecArgv, path.join(root, "scripts", script), arch, ...args], {
    cwd: buildDir,
    env: {},
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
    timeout: 300_000,
  });
  if (run.status !== 0) fail(`${script} with ${target.run.join(" ")} failed (${run.error?.message ?? `exit ${run.status ?? run.signal}`}): ${run.stderr}`);
}
runCacheScript("chunk-cache.cjs", chunks.filter((c) => !c.sharesWithMain).map((c) => c.name));
// The main bundle's code cache, made after a start-up run up to the `initialize` response, and
// the agent chunk's, after that run's first turn (scripts/start-up-cache.cjs: a run that takes one
// path whatever the machine), by the target's node under the same flags, environment and stdio as
// the chunks' caches, for the same reasons.
runCacheScript("start-up-cache.cjs", [seaBundle, ...chunks.filter((c) => c.sharesWithMain).map((c) => c.name)]);
step(`code caches: ${seaBundle}.${arch}.cache ${fs.statSync(path.join(buildDir, `${seaBundle}.${arch}.cache`)).size} bytes, ${chunks.map((c) => `${c.name}.${arch}.cache ${fs.statSync(path.join(buildDir, `${c.name}.${arch}.cache`)).size} bytes`).join(", ")}`);
fs.writeFileSync(
  path.join(buildDir, seaConfig),
  JSON.stringify({
    main: seaMain,
    output: blob,
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    execArgv: seaExecArgv,
    assets: { ...Object.fromEntries([seaBundle, ...chunks.map((c) => c.name)].flatMap((name) => [[name, name], [`${name}.cache`, `${name}.${arch}.cache`]])), ...landlockAsset },
  }),
);
try {
  execFileSync(target.run[0], [...target.run.slice(1), "--random-seed=1", ...seaExecArgv, "--experimental-sea-config", seaConfig], {
    cwd: buildDir,
    stdio: ["ignore", "ignore", "inherit"],
  });
} catch (err) {
  fail(`making the SEA blob with ${target.run.join(" ")} failed (${err.message}); for arm64: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross`);
}
step(`SEA blob (${arch})`);

// Strip the copy of node *before* injection: stripping after postject breaks the binary.
const tmp = `${exe}.tmp`;
fs.rmSync(tmp, { force: true });
fs.copyFileSync(target.node, tmp);
fs.chmodSync(tmp, 0o755);
try {
  execFileSync(target.strip, [tmp], { stdio: "inherit" });
} catch {
  if (!native) fail(`${target.strip} is not available: apt-get install binutils-aarch64-linux-gnu`);
  process.stderr.write("build: strip is not available; the binary keeps node's symbols (larger, works the same)\n");
}
const postject = path.join(root, "node_modules", "postject", "dist", "cli.js");
// postject's LIEF prints a dozen "Can't find string offset for section name" warnings on
// node's stripped ELF (harmless: the section table has no names left); any other line is shown.
const injected = spawnSync(process.execPath, [postject, tmp, "NODE_SEA_BLOB", path.join(buildDir, blob), "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], {
  stdio: ["ignore", "ignore", "pipe"],
  encoding: "utf8",
});
const said = (injected.stderr ?? "").split("\n").filter((line) => line.trim() && !line.includes("Can't find string offset"));
if (said.length) process.stderr.write(`${said.join("\n")}\n`);
if (injected.status !== 0) fail(`postject failed (exit ${injected.status ?? injected.signal})`);
fs.renameSync(tmp, exe);
step(`${path.relative(root, exe)} ${fs.statSync(exe).size} bytes`);

if (exe !== download) {
  fs.copyFileSync(exe, download);
  fs.chmodSync(download, 0o755);
}
const sha = createHash("sha256").update(fs.readFileSync(download)).digest("hex");
fs.writeFileSync(`${download}.sha256`, `${sha}  ${path.basename(download)}\n`);
step(`${path.relative(root, download)} sha256 ${sha.slice(0, 16)}…`);
