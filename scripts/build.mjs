#!/usr/bin/env node
// Builds the single executable: esbuild bundle → SEA blob → a stripped copy of node → postject.
// Outputs bin/harness-bridge, and dist/harness-bridge-linux-x64 (+ .sha256) as the standalone download.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// esbuild and postject are devDependencies: a fresh clone has neither until `npm ci`.
const esbuild = await import("esbuild").catch(() => {
  process.stderr.write("build: esbuild is not installed: run `npm ci` at the repository root first (or `bash scripts/setup.sh`)\n");
  process.exit(1);
});
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const buildDir = path.join(root, "build");
const bundle = path.join(buildDir, "harness-bridge.cjs");
const blob = path.join(buildDir, "sea-prep.blob");
const seaConfig = path.join(buildDir, "sea-config.json");
const exe = path.join(root, "bin", "harness-bridge");
const platform = `${process.platform}-${process.arch}`;
const download = path.join(root, "dist", `harness-bridge-${platform}`);
const started = Date.now();
const step = (what) => process.stderr.write(`build: ${what} (${Date.now() - started} ms)\n`);

fs.mkdirSync(buildDir, { recursive: true });
fs.mkdirSync(path.dirname(exe), { recursive: true });
fs.mkdirSync(path.dirname(download), { recursive: true });

await esbuild.build({
  entryPoints: [path.join(root, "src", "main.ts")],
  outfile: bundle,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  legalComments: "none",
  // ESM-only dependencies (fdir, under tinyglobby) call createRequire(import.meta.url) at load
  // time; in a CommonJS bundle import.meta is empty, so give it this file's URL (the executable's
  // path inside the SEA) instead of crashing the first glob/grep.
  define: { __HARNESS_VERSION__: JSON.stringify(pkg.version), "import.meta.url": "__bundleUrl" },
  banner: { js: 'var __bundleUrl=require("node:url").pathToFileURL(__filename).href;' },
  logLevel: "warning",
});
step(`bundle ${fs.statSync(bundle).size} bytes`);

// Reproducible: the same commit gives the same bytes, wherever the tree is. The blob records
// `main` as written (so it is relative, made in build/), and its V8 code cache lays out hash
// tables by the process's hash seed, which V8 draws from its random generator: a fixed
// --random-seed fixes both. V8 leaves random_seed out of the flag hash that a code cache is
// checked against, so the cache is still accepted by the binary at run time (a fixed
// --hash-seed is not: it would be rejected, and start-up would lose what the cache saves).
fs.writeFileSync(seaConfig, JSON.stringify({ main: path.basename(bundle), output: path.basename(blob), disableExperimentalSEAWarning: true, useCodeCache: true }));
execFileSync(process.execPath, ["--random-seed=1", "--experimental-sea-config", path.basename(seaConfig)], {
  cwd: buildDir,
  stdio: ["ignore", "ignore", "inherit"],
});
step("SEA blob");

// Strip the copy of node *before* injection: stripping after postject breaks the binary.
const tmp = `${exe}.tmp`;
fs.rmSync(tmp, { force: true });
fs.copyFileSync(process.execPath, tmp);
fs.chmodSync(tmp, 0o755);
try {
  execFileSync("strip", [tmp], { stdio: "inherit" });
} catch {
  process.stderr.write("build: strip is not available; the binary keeps node's symbols (larger, works the same)\n");
}
const postject = path.join(root, "node_modules", "postject", "dist", "cli.js");
execFileSync(process.execPath, [postject, tmp, "NODE_SEA_BLOB", blob, "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], {
  stdio: ["ignore", "ignore", "inherit"],
});
fs.renameSync(tmp, exe);
step(`bin/harness-bridge ${fs.statSync(exe).size} bytes`);

fs.copyFileSync(exe, download);
fs.chmodSync(download, 0o755);
const sha = createHash("sha256").update(fs.readFileSync(download)).digest("hex");
fs.writeFileSync(`${download}.sha256`, `${sha}  ${path.basename(download)}\n`);
step(`${path.relative(root, download)} sha256 ${sha.slice(0, 16)}…`);
