// Reproducible builds: two copies of this tree, at paths of different lengths and with no
// build output in them, build byte-identical executables. Before the fix the SEA blob held the
// absolute path of the bundle and a code cache laid out by a random hash seed (three builds,
// three sha256).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-repro-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The tree as a fresh clone of the working tree would have it: tracked and new files, no build/, bin/, dist/. */
function cleanCopy(dest: string, withNodeModules = true): void {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "" && fs.lstatSync(path.join(root, f), { throwIfNoEntry: false })?.isFile());
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(dest, f)), { recursive: true });
    fs.copyFileSync(path.join(root, f), path.join(dest, f));
  }
  if (withNodeModules) fs.symlinkSync(path.join(root, "node_modules"), path.join(dest, "node_modules"));
}

/** Builds `dest`; with `stderrFile`, the build's stderr is that file, not a pipe (the chunks'
 * code caches once differed by what their evaluation saw of its process's stdio). */
function buildAndHash(dest: string, stderrFile?: string): { bin: string; sidecar: string } {
  cleanCopy(dest);
  const stderr = stderrFile === undefined ? "pipe" : fs.openSync(stderrFile, "w");
  try {
    execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: dest, stdio: ["ignore", "ignore", stderr] });
  } finally {
    if (typeof stderr === "number") fs.closeSync(stderr);
  }
  const bin = createHash("sha256").update(fs.readFileSync(path.join(dest, "bin", "harness-bridge"))).digest("hex");
  const sidecar = fs.readFileSync(path.join(dest, "dist", `harness-bridge-${process.platform}-${process.arch}.sha256`), "utf8");
  return { bin, sidecar };
}

describe("scripts/build.mjs", () => {
  it("builds the same bytes from two clean copies at different paths, stderr a pipe and a file", () => {
    const a = buildAndHash(path.join(tmp, "a"));
    const b = buildAndHash(path.join(tmp, "second", "clone-with-a-longer-path"), path.join(tmp, "second-build.log"));
    expect(b.bin).toBe(a.bin);
    expect(a.sidecar).toBe(`${a.bin}  harness-bridge-${process.platform}-${process.arch}\n`);
    expect(b.sidecar).toBe(a.sidecar);
  }, 240_000);

  it("names the setup step on a fresh clone, before `npm ci`", () => {
    const dest = path.join(tmp, "fresh");
    cleanCopy(dest, false);
    const run = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: dest, encoding: "utf8" });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe("build: esbuild is not installed: run `npm ci` at the repository root first (or `bash scripts/setup.sh`)\n");
    expect(fs.existsSync(path.join(dest, "bin", "harness-bridge"))).toBe(false);
  });
});
