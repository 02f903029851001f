/**
 * The one naming rule of the temporaries written beside a target and renamed over it
 * (src/temp-name.ts): each write gets a name of its own, even in one process (the pid alone is
 * shared by bridges of different PID namespaces), and a scan removes only leftovers old enough
 * that no live writer can still be writing them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isTempName, skipTemp, STALE_TEMP_MS, tempSibling } from "../src/temp-name.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-temp-name-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const age = (file: string, ms: number) => {
  const then = new Date(Date.now() - ms);
  fs.utimesSync(file, then, then);
};

describe("temporary names", () => {
  it("are new for every write of one process, beside the target, and recognizable", () => {
    const target = path.join(dir, "x.meta.json");
    const names = Array.from({ length: 1000 }, () => tempSibling(target));
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(path.dirname(name)).toBe(dir);
      expect(path.basename(name).startsWith(`x.meta.json.tmp-${process.pid}-`)).toBe(true);
      expect(isTempName(name)).toBe(true);
    }
    for (const other of [target, `${target}.tmp`, `${target}.${process.pid}.tmp`, "landlock-verdict-0123456789abcdef", "s.jsonl", "s.lock"]) expect(isTempName(other)).toBe(false);
  });

  it("are removed by a scan once stale, kept while young; other names are the scan's own", () => {
    const target = path.join(dir, "blob");
    const stale = tempSibling(target);
    const young = tempSibling(target);
    const nearly = tempSibling(target);
    for (const file of [stale, young, nearly, target]) fs.writeFileSync(file, "x");
    age(stale, STALE_TEMP_MS + 60_000);
    age(nearly, STALE_TEMP_MS - 60_000);
    age(target, 10 * STALE_TEMP_MS);
    const skip = (file: string) => skipTemp(path.dirname(file), path.basename(file));
    expect([stale, young, nearly, target].map(skip)).toEqual([true, true, true, false]);
    expect(fs.readdirSync(dir).sort()).toEqual([target, young, nearly].map((file) => path.basename(file)).sort());
    // Already gone, or a folder under such a name: skipped, never an error.
    expect(skip(stale)).toBe(true);
    const folder = tempSibling(target);
    fs.mkdirSync(folder);
    age(folder, 2 * STALE_TEMP_MS);
    expect(skip(folder)).toBe(true);
    expect(fs.statSync(folder).isDirectory()).toBe(true);
  });
});
