// Run by scripts/build.mjs with the embedded node (under qemu for arm64), in build/, under the
// binary's V8 flags: `node start-up-cache.cjs ARCH FILE` makes `FILE.ARCH.cache`, the V8 code cache
// of the main bundle as the single executable evaluates it (FILE is one function expression,
// src/server/chunk.ts). The bundle is run as the bridge, `--stdio`, with one `initialize` on
// stdin, and the cache is made at its first stdout write, the response: so it holds the
// functions the start-up path compiled, which a cache made after compiling alone leaves to be
// compiled at every start.
//
// The bytes must depend only on the bundle, the node and the flags: what a run compiles depends
// on the path it takes, so the run takes one that does not look at the machine. `--permission-mode
// read-only` starts no sandbox probe and looks for no bubblewrap, `--no-session-log` opens no
// store, the workspace is `/`, the provider the offline `scripted` demo; build.mjs gives the run
// no environment, the same stdio on every build and --random-seed/--predictable, as for the chunks.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const builtinRequire = require("./builtin-require.cjs");

const [arch, name] = process.argv.slice(2);
const file = path.resolve(name);
// Named as given (relative to build/), as the chunks are: the name is part of the cache.
const script = new vm.Script(fs.readFileSync(name, "utf8"), { filename: name });
let made = false;
const stdout = process.stdout;
stdout.write = (line) => {
  // Anything but the `initialize` result means the run took another path: no cache from it.
  if (!String(line).startsWith('{"jsonrpc":"2.0","id":1,"result":')) {
    process.stderr.write(`start-up-cache: the bundle did not answer initialize: ${String(line).slice(0, 500)}\n`);
    process.exit(1);
  }
  fs.writeFileSync(`${name}.${arch}.cache`, script.createCachedData());
  made = true;
  process.exit(0);
};
process.on("exit", (code) => {
  if (!made && code === 0) {
    process.stderr.write("start-up-cache: the bundle exited without answering initialize\n");
    process.exitCode = 1;
  }
});
process.argv = [process.execPath, file, "--stdio", "--permission-mode", "read-only", "--no-session-log"];
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, builtinRequire, module_, file, path.dirname(file));
