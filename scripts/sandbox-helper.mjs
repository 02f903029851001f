#!/usr/bin/env node
// Builds the Landlock helper (src/sandbox/helper/landlock-exec.c): a small static C program,
// for linux-x64 and linux-arm64, with zig's C compiler (the `ziglang` package from PyPI, pinned
// below, so every machine compiles with the same compiler and musl). scripts/build.mjs calls
// buildSandboxHelper() and embeds the result as a SEA asset with its sha256; run alone it builds
// one arch and prints the file and sha256:
//   node scripts/sandbox-helper.mjs [x64|arm64 [OUT_DIR]]   (an OUT_DIR always compiles afresh, with its own zig cache)
// Reproducible: fixed flags, no build id, no paths or times in the output — the same source
// gives the same bytes (test/sandbox/landlock-build.test.ts builds twice and compares).
// Where zig comes from: HARNESS_ZIG (a zig executable), else `python -m ziglang` of the venv
// zig-ZIG_VERSION in the machine's cache (HARNESS_CACHE_DIR, default
// ${XDG_CACHE_HOME:-~/.cache}/harness-bridge, as scripts/setup-real-model.sh), made there on
// first use (python3 -m venv; pip install ziglang==ZIG_VERSION) and shared by every clone, with
// zig's own cache beside it.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

export const ZIG_VERSION = "0.14.1";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const source = path.join(root, "src", "sandbox", "helper", "landlock-exec.c");
const targets = { x64: "x86_64-linux-musl", arm64: "aarch64-linux-musl" };
/** Fixed flags: size-optimised, static, stripped, no build id (it would hash the inputs' paths). */
const FLAGS = ["-static", "-Os", "-s", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wl,--build-id=none", "-fno-ident"];

/** The machine's cache of zig (see above). */
function zigHome() {
  const env = process.env;
  const cache = env.HARNESS_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "harness-bridge");
  return path.join(cache, `zig-${ZIG_VERSION}`);
}

/** The command that runs zig (an argv prefix), installing the pinned ziglang into the cache if needed. */
function zig() {
  if (process.env.HARNESS_ZIG) return [process.env.HARNESS_ZIG];
  const venv = path.join(zigHome(), "venv");
  const python = path.join(venv, "bin", "python");
  const have = () => {
    try {
      return execFileSync(python, ["-m", "ziglang", "version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() === ZIG_VERSION;
    } catch {
      return false;
    }
  };
  if (!have()) {
    process.stderr.write(`build: installing ziglang==${ZIG_VERSION} (zig's C compiler, for the Landlock helper) into ${venv}\n`);
    try {
      if (!fs.existsSync(python)) execFileSync("python3", ["-m", "venv", venv], { stdio: ["ignore", "ignore", "inherit"] });
      execFileSync(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", `ziglang==${ZIG_VERSION}`], { stdio: ["ignore", "ignore", "inherit"] });
    } catch (err) {
      throw new Error(`could not install ziglang==${ZIG_VERSION} into ${venv} (${err.message}): it needs python3 with venv (apt-get install python3-venv) and PyPI, or set HARNESS_ZIG to a zig ${ZIG_VERSION}`);
    }
    if (!have()) throw new Error(`ziglang in ${venv} is not ${ZIG_VERSION}`);
  }
  return [python, "-m", "ziglang"];
}

/**
 * Compiles the helper for `arch` into `outDir`/landlock-exec-ARCH; returns its path, bytes and
 * sha256 (also written beside it as landlock-exec-ARCH.sha256, which the sources read when they
 * run outside the single executable, as in the tests). An output whose inputs (source, flags, zig,
 * target) are unchanged is reused unless `rebuild`; `localCache` gives zig a cache of its own for
 * this compilation (the reproducibility test compiles afresh, not from zig's cache).
 */
export function buildSandboxHelper(arch, { buildDir = path.join(root, "build"), outDir = path.join(buildDir, "sandbox"), rebuild = false, localCache } = {}) {
  const target = targets[arch];
  if (!target) throw new Error(`the Landlock helper is built for ${Object.keys(targets).join(", ")}, not ${arch}`);
  fs.mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, `landlock-exec-${arch}`);
  const cache = path.join(zigHome(), "cache");
  // What the bytes depend on: a build with the same key is reused (zig takes ~15 s a build).
  const key = createHash("sha256").update(JSON.stringify([ZIG_VERSION, target, FLAGS, fs.readFileSync(source, "utf8")])).digest("hex");
  const known = (() => {
    try {
      return fs.readFileSync(`${out}.key`, "utf8") === key && fs.existsSync(out);
    } catch {
      return false;
    }
  })();
  if (known && !rebuild) return described(out);
  const [cmd, ...pre] = zig();
  // Compiled from the source's own folder with a relative name: no absolute path reaches the output.
  execFileSync(cmd, [...pre, "cc", "-target", target, ...FLAGS, "-o", `${out}.tmp`, path.basename(source)], {
    cwd: path.dirname(source),
    env: { ...process.env, ZIG_GLOBAL_CACHE_DIR: cache, ZIG_LOCAL_CACHE_DIR: localCache ?? cache, SOURCE_DATE_EPOCH: "0" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  fs.renameSync(`${out}.tmp`, out);
  const built = described(out);
  fs.writeFileSync(`${out}.sha256`, `${built.sha256}\n`);
  fs.writeFileSync(`${out}.key`, key);
  return built;
}

function described(file) {
  const bytes = fs.readFileSync(file);
  return { file, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arch = process.argv[2] ?? process.arch;
  const outDir = process.argv[3];
  const built = buildSandboxHelper(arch, outDir ? { outDir, rebuild: true, localCache: path.join(outDir, "zig-cache") } : {});
  process.stdout.write(`${built.file} ${built.size} bytes sha256 ${built.sha256}\n`);
}
