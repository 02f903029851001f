/**
 * Without a session log, checkpoints live in a private folder of the process in TMPDIR, removed
 * at exit (src/agent/checkpoints/memory-folder.ts). A process killed outright runs no exit
 * listener: its folder, copies of the user's files, stayed for good. Each folder now names its
 * process, and the next process to make one removes those whose process is gone, and no other.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { privateCheckpointFolder, pruneLeftFolders } from "../../src/agent/checkpoints/memory-folder.js";

let base: string;
const savedTmpdir = process.env.TMPDIR;
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), "hb-cp-folders-"));
});
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  fs.rmSync(base, { recursive: true, force: true });
});

const dead = () => spawnSync("true").pid; // exited and reaped: no such process now
const line = (pid: number, extra: object = {}) => `${JSON.stringify({ pid, start: "", host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid"), ...extra })}\n`;
/** A checkpoint folder as a process left it: its owner file (if any) and a kept content. */
function plant(name: string, owner: string | undefined): string {
  const dir = path.join(base, `harness-checkpoints-${name}`);
  fs.mkdirSync(path.join(dir, "s.checkpoints", "blobs"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, "s.checkpoints", "blobs", "x"), "a copy of the user's file");
  if (owner !== undefined) fs.writeFileSync(path.join(dir, "owner"), owner, { mode: 0o600 });
  return dir;
}
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe("the checkpoint folder of a process without session logs", () => {
  it("names its process, and removes the folders killed processes left when it is made", async () => {
    const killed = plant("killed", line(dead()));
    process.env.TMPDIR = base;
    const mine = privateCheckpointFolder();
    expect(path.dirname(mine)).toBe(base);
    expect(JSON.parse(fs.readFileSync(path.join(mine, "owner"), "utf8"))).toMatchObject({ pid: process.pid, host: os.hostname() });
    await until(() => !fs.existsSync(killed));
    expect(fs.existsSync(killed)).toBe(false);
    expect(fs.existsSync(mine)).toBe(true);
  });

  it("keeps every folder whose process may still run or cannot be told", async () => {
    const gone = plant("gone", line(dead()));
    const kept = [
      plant("live", line(process.ppid)),
      plant("no-owner", undefined),
      plant("half-written", "{"),
      plant("elsewhere", line(dead(), { host: "another-host" })),
      plant("other-namespace", line(dead(), { pidns: "pid:[1]" })),
      plant("mine", line(dead())),
    ];
    fs.mkdirSync(path.join(base, "unrelated"));
    await pruneLeftFolders(base, path.join(base, "harness-checkpoints-mine"));
    expect(fs.existsSync(gone)).toBe(false);
    for (const dir of kept) expect(fs.readFileSync(path.join(dir, "s.checkpoints", "blobs", "x"), "utf8"), dir).toBe("a copy of the user's file");
    expect(fs.existsSync(path.join(base, "unrelated"))).toBe(true);
  });
});
