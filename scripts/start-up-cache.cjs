// Run by scripts/build.mjs with the embedded node (under qemu for arm64), in build/, under the
// binary's V8 flags: `node start-up-cache.cjs ARCH FILE AGENT` makes `FILE.ARCH.cache`, the V8
// code cache of the main bundle as the single executable evaluates it (FILE is one function
// expression, src/server/chunk.ts), and `AGENT.ARCH.cache`, the agent chunk's (AGENT, which
// takes modules from the main bundle, so only the bundle can evaluate it: agent-modules.ts). The
// bundle is run as the bridge, `--stdio`, with one `initialize` and one `session/prompt` on
// stdin. The main bundle's cache is made at its first stdout write, the `initialize` response:
// so it holds the functions the start-up path compiled, which a cache made after compiling alone
// leaves to be compiled at every start. The agent chunk's is made at the prompt's response: so it
// holds the functions a first turn compiles (bench/README.md, "Cold start, round 7").
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
// offline `scripted` one with a script of this run's (`TURN`: text only, so no tool reads the
// machine's files); build.mjs gives the run no environment but this, the same stdio on every
// build and --random-seed/--predictable, as for the chunks. stdin is a stream of this script's,
// which holds the two requests and never ends (at EOF the bridge would finish before the turn).
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const os = require("node:os");
const vm = require("node:vm");
const builtinRequire = require("./builtin-require.cjs");

const [arch, name, agent] = process.argv.slice(2);
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
// The turn: what a model's answer makes the agent do, without a tool.
const TURN = { turns: [{ steps: [{ reasoning: "A first turn of the start-up run.", text: "The answer, streamed in chunks.", chunkSize: 8 }] }] };
const model = path.join(tmp, "turn.json");
fs.writeFileSync(model, JSON.stringify(TURN));
const requests = [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: { cwd: "/", provider: "scripted", model } },
  { jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "start-up", contentBlocks: [{ type: "text", text: "go" }] } },
];
const getBuiltinModule = process.getBuiltinModule;
process.getBuiltinModule = (id) => {
  if (String(id).replace(/^node:/, "") === "child_process") {
    process.stderr.write("start-up-cache: the start-up run loaded node:child_process: it must start no process (its answer would be the machine's)\n");
    process.exit(1);
  }
  return getBuiltinModule.call(process, id);
};
let made = false;
let answered = false;
let agentScript;
// The bundle's `node:vm`, whose Script keeps the agent chunk's (the bundle evaluates chunks with
// it), named relative to build/ as the chunks' are: the name is part of the cache, and the bundle
// names a chunk by its absolute path.
class Script extends vm.Script {
  constructor(code, options = {}) {
    const chunk = typeof options.filename === "string" && path.basename(options.filename) === agent;
    super(code, chunk ? { ...options, filename: agent } : options);
    if (chunk) agentScript = this;
  }
}
const bundleRequire = (id) => (id === "node:vm" || id === "vm" ? { ...vm, Script } : builtinRequire(id));
const { Readable } = require("node:stream");
const input = new Readable({ read() {} });
input.push(Buffer.from(requests.map((request) => `${JSON.stringify(request)}\n`).join("")));
Object.defineProperty(process, "stdin", { value: input, configurable: true });
const fail = (why) => {
  process.stderr.write(`start-up-cache: ${why}\n`);
  process.exit(1);
};
// What the bridge writes is checked and dropped; a write's callback is called, as a pipe's
// would be once written (the bridge's writer waits for it before its next write).
const stdout = process.stdout;
stdout.write = (chunk, encoding, callback) => {
  const done = typeof encoding === "function" ? encoding : callback;
  if (done) process.nextTick(done);
  for (const text of String(chunk).split("\n")) {
    if (!made) {
      // Anything but the `initialize` result reporting no confinement means the run took another
      // path: no cache from it.
      if (!text.startsWith('{"jsonrpc":"2.0","id":1,"result":') || !text.includes('"sandbox":{"bash":"none"')) fail(`the bundle did not answer initialize with sandbox none: ${text.slice(0, 500)}`);
      fs.writeFileSync(`${name}.${arch}.cache`, script.createCachedData());
      made = true;
    } else if (text.startsWith('{"jsonrpc":"2.0","id":2,')) {
      if (!text.startsWith('{"jsonrpc":"2.0","id":2,"result":{"status":"ok"')) fail(`the turn did not end ok: ${text.slice(0, 500)}`);
      if (!agentScript) fail(`the bundle answered the prompt without evaluating ${agent}`);
      fs.writeFileSync(`${agent}.${arch}.cache`, agentScript.createCachedData());
      answered = true;
      process.exit(0);
    }
  }
  return true;
};
// Inside the build's own bound on this run (build.mjs: 300 s), so that this one says what was missing.
setTimeout(() => fail("the bundle did not answer the prompt within 240 s of its start"), 240_000).unref();
process.on("exit", (code) => {
  fs.rmSync(tmp, { recursive: true, force: true });
  if (code === 0 && !answered) {
    process.stderr.write(`start-up-cache: the bundle exited without answering ${made ? "the prompt" : "initialize"}\n`);
    process.exitCode = 1;
  }
});
process.argv = [process.execPath, file, "--stdio", "--no-session-log"];
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, bundleRequire, module_, file, path.dirname(file));
