/**
 * The logs of the repository's scripts are for people and CI: no colour escape codes when the
 * output is not a terminal, no npm funding/audit/deprecation chatter during setup, and the
 * artefacts a script builds kept where the docs say. Checked on the scripts' text, because the
 * scripts themselves need what a test machine lacks (qemu for test-arm64.sh, an empty
 * node_modules for `npm ci`); CI runs them for real (.ci/run).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const scripts = ["scripts", "bench"].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith(".sh"))
    .map((f) => `${dir}/${f}`),
);
/** The script's lines, without comments. */
const code = (rel: string) =>
  fs
    .readFileSync(path.join(root, rel), "utf8")
    .split("\n")
    .map((l) => l.replace(/(^|\s)#.*$/, ""));

describe("script logs", () => {
  it("every script that runs vitest sets NO_COLOR first when stdout is not a terminal", () => {
    // scripts/vitest: vitest on the pinned Node (scripts/pinned-node.mjs).
    const runsVitest = (l: string) => /\bnpx vitest\b|\bscripts\/vitest\b/.test(l);
    const running = scripts.filter((s) => code(s).some(runsVitest));
    expect(running).toEqual(expect.arrayContaining(["scripts/test.sh", "scripts/test-arm64.sh"]));
    for (const s of running) {
      const lines = code(s);
      const colourOff = lines.findIndex((l) => /\[ -t 1 \] \|\| export NO_COLOR=1/.test(l));
      const firstVitest = lines.findIndex(runsVitest);
      expect(colourOff, `${s}: no NO_COLOR for a piped log`).toBeGreaterThanOrEqual(0);
      expect(colourOff, `${s}: NO_COLOR set after vitest already ran`).toBeLessThan(firstVitest);
    }
  });

  it("npm installs quietly: no funding notices, audit reports or deprecation warnings", () => {
    const installs = scripts.flatMap((s) => code(s).filter((l) => !/^\s*echo\b/.test(l) && /\bnpm (ci|install|i)\b/.test(l)).map((l) => ({ s, l })));
    expect(installs.length).toBeGreaterThan(0);
    for (const { s, l } of installs) {
      for (const flag of ["--no-fund", "--no-audit", "--loglevel=error"]) expect(l, `${s}: ${l.trim()}`).toContain(flag);
    }
  });

  it("test-arm64.sh keeps the arm64 wheel in dist/, beside the arm64 binary, with its sha256", () => {
    const text = code("scripts/test-arm64.sh").join("\n");
    expect(text).toMatch(/build_wheel\.py --bin dist\/harness-bridge-linux-arm64 --out dist\b/);
    expect(text).toMatch(/sha256sum "\$\(basename "\$wheel"\)" > "\$\(basename "\$wheel"\)\.sha256"/);
    // Not built into a temporary folder and deleted (the fail-closed check's own workspace may be).
    expect(text).not.toMatch(/rm -rf "\$out"|out=\$\(mktemp -d|--out "?\$\(mktemp/);
  });
});
