/**
 * The Landlock helper's build is reproducible: two compilations from the source, each with a
 * zig cache of its own, give the bytes the build embedded (build/sandbox, written by
 * scripts/build.mjs), for both architectures — and they are small and static.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(__dirname, "../..");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function build(arch: string): { sha: string; size: number; bytes: Buffer } {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "hb-helper-build-"));
  dirs.push(out);
  const said = execFileSync(process.execPath, [path.join(root, "scripts", "sandbox-helper.mjs"), arch, out], { encoding: "utf8" });
  const m = /(\d+) bytes sha256 ([0-9a-f]{64})/.exec(said);
  expect(m, said).not.toBeNull();
  return { sha: m![2], size: Number(m![1]), bytes: fs.readFileSync(path.join(out, `landlock-exec-${arch}`)) };
}

describe.each(["x64", "arm64"])("the Landlock helper for %s", (arch) => {
  it("compiles to the same bytes twice, small and static", () => {
    const a = build(arch);
    const b = build(arch);
    expect(b.sha).toBe(a.sha);
    expect(a.size).toBeLessThan(200 * 1024);
    // ELF, no interpreter (static): no PT_INTERP program header.
    expect(a.bytes.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
    expect(a.bytes.includes(Buffer.from("ld-linux"))).toBe(false);
    expect(a.bytes.includes(Buffer.from(root))).toBe(false);
    const embedded = path.join(root, "build", "sandbox", `landlock-exec-${arch}.sha256`);
    // The native build always exists (the tests build bin/harness-bridge first); arm64 once built.
    if (arch === process.arch || fs.existsSync(embedded)) expect(fs.readFileSync(embedded, "utf8").trim()).toBe(a.sha);
  }, 180_000);
});
