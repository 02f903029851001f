#!/usr/bin/env node
// The Node.js the binaries embed, whatever node runs the build: package.json's
// `config.embeddedNode` (the one place the version is written), taken from npm's
// node-<platform>-<arch> package of that version. `npm pack` checks the tarball against the
// registry's integrity hash. The binary is kept in the machine's cache, as zig is
// (scripts/sandbox-helper.mjs): HARNESS_CACHE_DIR, default ${XDG_CACHE_HOME:-~/.cache}/harness-bridge,
// in node-<platform>-<arch>-<version>/ — so clean copies of the tree (the reproducibility test,
// CI's copies) and other work trees reuse it instead of fetching ~30 MB each.
//
//   node scripts/pinned-node.mjs [--arch x64|arm64]   prints the path of that node (fetched once)
//   node scripts/pinned-node.mjs --run ARGS...        runs this machine's pinned node with ARGS
//                                                     (npm run test:ts: vitest on the Node that ships)
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The machine's cache (see above). */
function cacheDir(env = process.env) {
  return env.HARNESS_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "harness-bridge");
}

/** The pinned version, e.g. "24.22.3". */
export function pinnedNodeVersion() {
  const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).config?.embeddedNode;
  if (typeof version !== "string" || !/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`package.json config.embeddedNode must be a version such as 24.22.3 (got ${JSON.stringify(version)})`);
  return version;
}

/** The path of the pinned node for `arch` (this platform), fetched from npm into the cache when it is not there yet. */
export function pinnedNode(arch = process.arch, log = (what) => process.stderr.write(`${what}\n`)) {
  const version = pinnedNodeVersion();
  const name = `node-${process.platform}-${arch}`;
  const cache = cacheDir();
  const dir = path.join(cache, `${name}-${version}`);
  const node = path.join(dir, "package", "bin", "node");
  if (fs.existsSync(node)) return node;
  fs.mkdirSync(cache, { recursive: true });
  // A partial extraction from an interrupted run is never taken for the binary: extract into a
  // fresh folder and rename it into place.
  const partial = fs.mkdtempSync(path.join(cache, `.${name}-${version}-`));
  try {
    const tarball = execFileSync("npm", ["pack", `${name}@${version}`, "--pack-destination", partial, "--silent"], {
      cwd: partial,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    }).trim();
    execFileSync("tar", ["-xzf", path.join(partial, tarball), "-C", partial, "package/bin/node"], { stdio: "inherit" });
    fs.rmSync(path.join(partial, tarball));
    fs.chmodSync(partial, 0o755); // mkdtemp made it private; a test run as another user reads it
    try {
      fs.renameSync(partial, dir);
    } catch (err) {
      // Another build fetched it meanwhile: theirs is as good.
      if (!fs.existsSync(node)) throw err;
      fs.rmSync(partial, { recursive: true, force: true });
    }
  } catch (err) {
    fs.rmSync(partial, { recursive: true, force: true });
    throw new Error(`fetching ${name}@${version} from npm failed: ${err.message}`);
  }
  log(`pinned-node: ${name}@${version} from npm`);
  return node;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  try {
    if (args[0] === "--run") {
      const ran = spawnSync(pinnedNode(), args.slice(1), { stdio: "inherit" });
      process.exitCode = ran.status ?? 1;
    } else if (args.length === 0 || (args.length === 2 && args[0] === "--arch")) {
      process.stdout.write(`${pinnedNode(args[1] ?? process.arch)}\n`);
    } else {
      throw new Error("usage: node scripts/pinned-node.mjs [--arch x64|arm64] | --run ARGS...");
    }
  } catch (err) {
    process.stderr.write(`pinned-node: ${err.message}\n`);
    process.exitCode = 1;
  }
}
