/**
 * Two bridges on one private folder: one prunes the verdict files no start rewrote for a day
 * while the other remembers a fresh verdict under one of those names. What the second wrote
 * must survive the first's prune, whatever the order of their steps: the prune looks at a file
 * (its age), then removes it, and another bridge may rename its fresh file into that name in
 * between. `lstat` is wrapped to run the other bridge's save exactly there.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";

const between = vi.hoisted(() => ({ file: "", run: undefined as undefined | (() => void) }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const lstat = (file: fs.PathLike, callback: (error: NodeJS.ErrnoException | null, st: fs.Stats) => void) =>
    real.lstat(file, (error, st) => {
      if (String(file) === between.file && between.run) {
        const run = between.run;
        between.run = undefined;
        run();
      }
      callback(error, st);
    });
  return { ...real, default: { ...real, lstat }, lstat };
});

const { pruneVerdicts, recalledVerdict, rememberVerdict, verdictFile } = await import("../../src/sandbox/verdict-cache.js");

const KEY = "boot x\nhelper y";
const DAY_AND_A_BIT = 25 * 60 * 60 * 1000;
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-verdict-race-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it("a verdict another bridge renames into place while the prune looks at the stale one it replaces is kept", async () => {
  rememberVerdict(dir, KEY, { abi: 3 });
  const file = verdictFile(dir, KEY);
  const old = new Date(Date.now() - DAY_AND_A_BIT);
  fs.utimesSync(file, old, old);
  between.file = file;
  between.run = () => rememberVerdict(dir, KEY, { abi: 5 });
  await pruneVerdicts(dir);
  expect(between.run, "the other bridge's save ran").toBeUndefined();
  expect(recalledVerdict(dir, KEY)).toEqual({ abi: 5 });
  expect(fs.readdirSync(dir)).toEqual([path.basename(file)]);
});

it("a stale verdict nobody rewrites is still removed, with nothing left beside it", async () => {
  rememberVerdict(dir, KEY, { abi: 3 });
  const old = new Date(Date.now() - DAY_AND_A_BIT);
  fs.utimesSync(verdictFile(dir, KEY), old, old);
  await pruneVerdicts(dir);
  expect(fs.readdirSync(dir)).toEqual([]);
});
