// Run by scripts/build.mjs with the embedded node (under qemu for arm64), in build/, under the
// binary's V8 flags: `node chunk-cache.cjs ARCH CHUNK…` makes `<chunk>.<arch>.cache`, the V8 code
// cache of each chunk, which the single executable embeds beside the chunk as `<chunk>.cache`
// (src/server/chunk.ts). Each chunk is evaluated
// first, as the bridge evaluates it, so the cache holds its module bodies' bytecode too, not only
// its top level. Evaluation does no I/O and starts nothing, so with the build's fixed
// --random-seed and --predictable (scripts/build.mjs) the cache's bytes are the same on every
// build.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const builtinRequire = require("./builtin-require.cjs");

const [arch, ...names] = process.argv.slice(2);
for (const name of names) {
  const script = new vm.Script(fs.readFileSync(name, "utf8"), { filename: name });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, builtinRequire, module, path.resolve(name), process.cwd());
  fs.writeFileSync(`${name}.${arch}.cache`, script.createCachedData());
}
// A chunk's evaluation may have left a handle open (a diagnostics subscription, a timer).
process.exit(0);
