/**
 * The scans that delete what killed processes left (src/temp-name.ts `skipTemp`, the verdict
 * prune of src/sandbox/verdict-cache.ts, the checkpoint folders of src/agent/checkpoints/
 * memory-folder.ts) meet names anyone may have planted: a link named like a temporary, a
 * command's folder holding links to the user's files, a checkpoint folder that is a link. None
 * of them ever removes what a link points to, or anything outside the folder scanned.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pruneLeftFolders } from "../src/agent/checkpoints/memory-folder.js";
import { pruneVerdicts } from "../src/sandbox/verdict-cache.js";
import { skipTemp, STALE_TEMP_MS } from "../src/temp-name.js";

let root: string;
let scanned: string;
let outside: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-prune-links-"));
  scanned = path.join(root, "scanned");
  outside = path.join(root, "users-files");
  fs.mkdirSync(scanned);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "precious"), "the user's own file");
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const later = () => Date.now() + 2 * STALE_TEMP_MS; // every planted name is stale by then
const precious = () => fs.readFileSync(path.join(outside, "precious"), "utf8");

describe("a scan that removes leftovers", () => {
  it("removes a link named like a temporary, never what it points to", () => {
    fs.symlinkSync(path.join(outside, "precious"), path.join(scanned, "x.tmp-1-aaaaaaaaaaaa"));
    fs.symlinkSync(outside, path.join(scanned, "y.tmp-1-aaaaaaaaaaaa"));
    fs.linkSync(path.join(outside, "precious"), path.join(scanned, "z.tmp-1-aaaaaaaaaaaa"));
    for (const name of fs.readdirSync(scanned)) expect(skipTemp(scanned, name, later())).toBe(true);
    expect(fs.readdirSync(scanned)).toEqual([]);
    expect(precious()).toBe("the user's own file");
    expect(fs.readdirSync(outside)).toEqual(["precious"]);
  });

  it("the verdict prune never follows a link out of the private folder: not a command's folder that is one, not the links a command left in its folder", async () => {
    fs.symlinkSync(outside, path.join(scanned, "tmp-planted"));
    const left = path.join(scanned, "tmp-left");
    fs.mkdirSync(path.join(left, "deep"), { recursive: true });
    fs.symlinkSync(outside, path.join(left, "deep", "to-folder"));
    fs.symlinkSync(path.join(outside, "precious"), path.join(left, "to-file"));
    fs.symlinkSync(path.join(outside, "precious"), path.join(scanned, "v.tmp-1-aaaaaaaaaaaa"));
    await pruneVerdicts(scanned, later());
    expect(fs.readdirSync(scanned)).toEqual(["tmp-planted"]); // not a folder: no command's, kept
    expect(precious()).toBe("the user's own file");
    expect(fs.readdirSync(outside)).toEqual(["precious"]);
  });

  it("a checkpoint folder name that is a link to a folder with a dead owner is kept, and so is its target", async () => {
    const dead = spawnSync("true").pid;
    fs.writeFileSync(path.join(outside, "owner"), `${JSON.stringify({ pid: dead, start: "", host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid") })}\n`);
    fs.symlinkSync(outside, path.join(scanned, "harness-checkpoints-planted"));
    // A real folder whose owner file is a link to a dead owner's line: not read, kept.
    const linked = path.join(scanned, "harness-checkpoints-linked-owner");
    fs.mkdirSync(linked);
    fs.symlinkSync(path.join(outside, "owner"), path.join(linked, "owner"));
    await pruneLeftFolders(scanned);
    expect(fs.readdirSync(scanned).sort()).toEqual(["harness-checkpoints-linked-owner", "harness-checkpoints-planted"]);
    expect(fs.readdirSync(outside).sort()).toEqual(["owner", "precious"]);
  });

  it("keeps a temporary whose time is in the future (a clock set back): a live write may be in it", () => {
    const file = path.join(scanned, "x.tmp-1-aaaaaaaaaaaa");
    fs.writeFileSync(file, "");
    const ahead = new Date(Date.now() + 3 * STALE_TEMP_MS);
    fs.utimesSync(file, ahead, ahead);
    expect(skipTemp(scanned, "x.tmp-1-aaaaaaaaaaaa")).toBe(true);
    expect(fs.existsSync(file)).toBe(true);
  });
});
