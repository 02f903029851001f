// Run by scripts/build.mjs with the embedded node (under qemu for arm64), in build/, under the
// binary's V8 flags: `node start-up-cache.cjs ARCH FILE` makes `FILE.ARCH.cache`, the V8 code cache
// of the main bundle as the single executable evaluates it (FILE is one function expression,
// src/server/chunk.ts). The bundle is run as the bridge, `--stdio`, with one `initialize` on
// stdin, and the cache is made at its first stdout write, the response: so it holds the
// functions the start-up path compiled, which a cache made after compiling alone leaves to be
// compiled at every start.
//
// The bytes must depend only on the bundle, the node and the flags: what a run compiles depends
// on the path it takes, so the run takes one that does not depend on the machine. It is the
// default mode's (`workspace-write`) on a machine without bubblewrap, the path that does the most
// before the response — the Landlock verdict's key and the rules (src/sandbox/probe.ts) — with
// every input of it fixed here: `HARNESS_BWRAP` names a file that is not there, `HOME` a folder
// holding one home toolchain (`.cargo/bin`) and one credential store (`.ssh`), both empty — so the
// rules' code for a toolchain that exists and a hidden path that exists runs too, as it does on
// most machines (a function the run never called is compiled at every start instead; the
// workspace `/` holds the store, so `initialize` refuses it) — and `TMPDIR` a folder that is not there, so
// no private folder can be made: no verdict is read (the lookup runs all the same, against a
// folder no process can make, so its code is in the cache too) or written, no helper written
// or started, and `initialize` reports `none`. Both are checked (the response; no `node:child_process`), so
// a change that makes the run start a process, whose answer would be the machine's, fails the
// build instead. `--no-session-log` opens no store, the workspace is `/`, the provider the
// offline `scripted` demo; build.mjs gives the run no environment but this, the same stdio on
// every build and --random-seed/--predictable, as for the chunks.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const os = require("node:os");
const vm = require("node:vm");
const builtinRequire = require("./builtin-require.cjs");

const [arch, name] = process.argv.slice(2);
const file = path.resolve(name);
// Named as given (relative to build/), as the chunks are: the name is part of the cache.
const script = new vm.Script(fs.readFileSync(name, "utf8"), { filename: name });
// The fixed inputs (see above), in a folder of its own, removed at exit.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "harness-start-up-cache-"));
fs.mkdirSync(path.join(tmp, "home", ".cargo", "bin"), { recursive: true });
fs.mkdirSync(path.join(tmp, "home", ".ssh"));
process.env.HOME = path.join(tmp, "home");
process.env.TMPDIR = path.join(tmp, "absent");
process.env.HARNESS_BWRAP = path.join(tmp, "absent", "bwrap");
const getBuiltinModule = process.getBuiltinModule;
process.getBuiltinModule = (id) => {
  if (String(id).replace(/^node:/, "") === "child_process") {
    process.stderr.write("start-up-cache: the start-up run loaded node:child_process: it must start no process (its answer would be the machine's)\n");
    process.exit(1);
  }
  return getBuiltinModule.call(process, id);
};
let made = false;
const stdout = process.stdout;
stdout.write = (line) => {
  // Anything but the `initialize` result reporting no confinement means the run took another
  // path: no cache from it.
  if (!String(line).startsWith('{"jsonrpc":"2.0","id":1,"result":') || !String(line).includes('"sandbox":{"bash":"none"')) {
    process.stderr.write(`start-up-cache: the bundle did not answer initialize with sandbox none: ${String(line).slice(0, 500)}\n`);
    process.exit(1);
  }
  fs.writeFileSync(`${name}.${arch}.cache`, script.createCachedData());
  made = true;
  process.exit(0);
};
process.on("exit", (code) => {
  fs.rmSync(tmp, { recursive: true, force: true });
  if (!made && code === 0) {
    process.stderr.write("start-up-cache: the bundle exited without answering initialize\n");
    process.exitCode = 1;
  }
});
process.argv = [process.execPath, file, "--stdio", "--no-session-log"];
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, builtinRequire, module_, file, path.dirname(file));
