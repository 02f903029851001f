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

const between = vi.hoisted(() => ({
  file: "",
  run: undefined as undefined | (() => void),
  /** Run once, right after the prune's look at the file it took (its own name for it). */
  afterTaken: undefined as undefined | (() => void),
  /** The error code `link` fails with (a file system without hard links); unset: the real `link`. */
  linkFails: undefined as undefined | string,
}));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const lstat = (file: fs.PathLike, callback: (error: NodeJS.ErrnoException | null, st: fs.Stats) => void) =>
    real.lstat(file, (error, st) => {
      if (String(file) === between.file && between.run) {
        const run = between.run;
        between.run = undefined;
        run();
      } else if (String(file).startsWith(`${between.file}.`) && between.afterTaken) {
        const run = between.afterTaken;
        between.afterTaken = undefined;
        run();
      }
      callback(error, st);
    });
  const link = (from: fs.PathLike, to: fs.PathLike, callback: (error: NodeJS.ErrnoException | null) => void) => {
    if (between.linkFails) process.nextTick(callback, Object.assign(new Error(`${between.linkFails}: link`), { code: between.linkFails }));
    else real.link(from, to, callback);
  };
  return { ...real, default: { ...real, lstat, link }, lstat, link };
});

const { pruneVerdicts, recalledVerdict, rememberVerdict, verdictFile } = await import("../../src/sandbox/verdict-cache.js");

const KEY = "boot x\nhelper y";
const DAY_AND_A_BIT = 25 * 60 * 60 * 1000;
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-verdict-race-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  Object.assign(between, { file: "", run: undefined, afterTaken: undefined, linkFails: undefined });
});

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

it("without hard links, a fresh verdict the prune took by mistake never replaces a newer one saved meanwhile", async () => {
  rememberVerdict(dir, KEY, { abi: 3 });
  const file = verdictFile(dir, KEY);
  const old = new Date(Date.now() - DAY_AND_A_BIT);
  fs.utimesSync(file, old, old);
  between.file = file;
  between.linkFails = "EPERM";
  // A bridge saves abi 5 as the prune looks at the stale file, so the prune takes that one; a
  // third saves abi 7 (say, its probe found 5 wrong) while the prune looks at what it took.
  between.run = () => rememberVerdict(dir, KEY, { abi: 5 });
  between.afterTaken = () => rememberVerdict(dir, KEY, { abi: 7 });
  await pruneVerdicts(dir);
  expect(between.afterTaken, "the third bridge's save ran").toBeUndefined();
  expect(recalledVerdict(dir, KEY)).toEqual({ abi: 7 });
  expect(fs.readdirSync(dir)).toEqual([path.basename(file)]);
});
