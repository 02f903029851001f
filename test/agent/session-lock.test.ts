/**
 * The session lock's file (src/agent/store/lock.ts), in process: a lock is a hard link to the
 * process's owner file in that folder; on a file system without hard links it is a file of its
 * own; an owner file removed by hand is made again. Two processes on one session:
 * test/server/e2e-two-bridges.test.ts and e2e-session-lock-attacks.test.ts.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { acquireLock, releaseLock, SessionLockedError } from "../../src/agent/store/lock.js";
import { isTempName, skipTemp } from "../../src/temp-name.js";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return { ...actual, linkSync: vi.fn(actual.linkSync), lstatSync: vi.fn(actual.lstatSync), renameSync: vi.fn(actual.renameSync) };
});

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lock-"));
});
afterEach(() => {
  vi.mocked(fs.linkSync).mockClear();
  vi.mocked(fs.lstatSync).mockClear();
  vi.mocked(fs.renameSync).mockClear();
  fs.rmSync(dir, { recursive: true, force: true });
});

const owners = () => fs.readdirSync(dir).filter((name) => name.startsWith("@owner-"));
const ownerLine = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));

describe("session lock files", () => {
  it("a lock is a link to this process's one owner file in the folder, which names it; released, only the lock goes", () => {
    const a = acquireLock(path.join(dir, "a.lock"), "a");
    const b = acquireLock(path.join(dir, "b.lock"), "b");
    expect(owners()).toHaveLength(1);
    const owner = path.join(dir, owners()[0]);
    expect(fs.statSync(owner).nlink).toBe(3);
    expect(ownerLine(a.file)).toMatchObject({ pid: process.pid });
    expect(() => acquireLock(a.file, "a")).toThrow(SessionLockedError); // this process holds it: not stale
    releaseLock(a);
    releaseLock(b);
    expect(fs.existsSync(a.file) || fs.existsSync(b.file)).toBe(false);
    expect(fs.statSync(owner).nlink).toBe(1);
    // The next turn links the same owner file again: no file is created per turn.
    releaseLock(acquireLock(a.file, "a"));
    expect(owners()).toEqual([path.basename(owner)]);
  });

  it("a turn's lock, once the owner file exists, is one link and no stat: its inode is the owner file's, and release removes exactly it", () => {
    releaseLock(acquireLock(path.join(dir, "a.lock"), "a")); // makes the owner file
    const owner = path.join(dir, owners()[0]);
    vi.mocked(fs.linkSync).mockClear();
    vi.mocked(fs.lstatSync).mockClear();
    const lock = acquireLock(path.join(dir, "a.lock"), "a");
    expect(vi.mocked(fs.linkSync).mock.calls).toEqual([[owner, lock.file]]);
    expect(fs.lstatSync).not.toHaveBeenCalled();
    expect(lock.ino).toBe(fs.statSync(owner).ino);
    expect(fs.statSync(lock.file).ino).toBe(lock.ino);
    releaseLock(lock);
    expect(fs.existsSync(lock.file)).toBe(false);
    expect(fs.statSync(owner).nlink).toBe(1);
  });

  it("a lock name that is no longer this process's inode (removed by hand, made by another) is not removed by release", () => {
    const lock = acquireLock(path.join(dir, "a.lock"), "a");
    fs.rmSync(lock.file);
    fs.writeFileSync(lock.file, `${JSON.stringify({ pid: 1, start: "", host: os.hostname() })}\n`);
    releaseLock(lock);
    expect(fs.existsSync(lock.file)).toBe(true);
  });

  it("a newer lock that got the inode number of this process's removed owner file is not removed by release", () => {
    const lock = acquireLock(path.join(dir, "a.lock"), "a");
    // The lock and its owner file removed from under the holder; their inode is free, and the
    // file system may give its number to the next file made: here, another process's lock.
    fs.rmSync(lock.file);
    fs.rmSync(path.join(dir, owners()[0]));
    fs.writeFileSync(lock.file, `${JSON.stringify({ pid: 1, start: "", host: os.hostname() })}\n`);
    // Made later than the owner file (the test is faster than the clock's tick: say so).
    const later = new Date(Date.now() + 5_000);
    fs.utimesSync(lock.file, later, later);
    const actual = vi.mocked(fs.lstatSync).getMockImplementation()!;
    vi.mocked(fs.lstatSync).mockImplementation(((file: fs.PathLike, options?: fs.StatSyncOptions) => {
      const st = actual(file, options as never) as fs.Stats;
      return file === lock.file ? Object.assign(st, { ino: lock.ino }) : st;
    }) as typeof fs.lstatSync);
    try {
      releaseLock(lock);
    } finally {
      vi.mocked(fs.lstatSync).mockImplementation(actual);
    }
    expect(ownerLine(lock.file)).toEqual({ pid: 1, start: "", host: os.hostname() });
  });

  it("a dead process's lock is taken over by name alone: its owner file and its other sessions' locks stay", () => {
    const dead = spawnSync("true").pid; // exited and reaped: no such process now
    const deadOwner = path.join(dir, `@owner-${dead}-0000abcd`);
    fs.writeFileSync(deadOwner, `${JSON.stringify({ pid: dead, start: "", host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid") })}\n`);
    fs.linkSync(deadOwner, path.join(dir, "a.lock"));
    fs.linkSync(deadOwner, path.join(dir, "b.lock"));
    const lock = acquireLock(path.join(dir, "a.lock"), "a");
    expect(ownerLine(lock.file)).toMatchObject({ pid: process.pid });
    expect(ownerLine(path.join(dir, "b.lock"))).toMatchObject({ pid: dead });
    expect(fs.statSync(deadOwner).nlink).toBe(2);
    expect(fs.readdirSync(dir).filter((n) => isTempName(n))).toEqual([]);
    releaseLock(lock);
  });

  it("a lock of another pid namespace is never taken over, even under this host name: its pid names no process here", () => {
    const lockFile = path.join(dir, "a.lock");
    const dead = spawnSync("true").pid; // no such process in this namespace
    // Another container on this volume, of this host name: its pids (1, 7, …) are its own.
    for (const pid of [dead, process.pid]) {
      const line = `${JSON.stringify({ pid, start: "", host: os.hostname(), pidns: "pid:[1]" })}\n`;
      fs.writeFileSync(lockFile, line);
      expect(() => acquireLock(lockFile, "a")).toThrow(/in another pid namespace \(pid:\[1\]\)/);
      expect(fs.readFileSync(lockFile, "utf8")).toBe(line);
    }
    // A line written without /proc (another container that does not mount it): no namespace to compare.
    const noProc = `${JSON.stringify({ pid: spawnSync("true").pid, start: "", host: os.hostname() })}\n`;
    fs.writeFileSync(lockFile, noProc);
    expect(() => acquireLock(lockFile, "a")).toThrow(/in a pid namespace this process cannot tell \(one of the two has no \/proc\)/);
    expect(fs.readFileSync(lockFile, "utf8")).toBe(noProc);
    fs.rmSync(lockFile);
    // This process's owner line names its own namespace.
    const lock = acquireLock(lockFile, "a");
    expect(ownerLine(lock.file)).toEqual({ pid: process.pid, start: expect.any(String), host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid"), boot: fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() });
    releaseLock(lock);
  });

  it("a stale lock moved aside and removed at that moment by another bridge's listing (an hour-old temporary) is taken over", () => {
    const lockFile = path.join(dir, "a.lock");
    const dead = spawnSync("true").pid;
    fs.writeFileSync(lockFile, `${JSON.stringify({ pid: dead, start: "", host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid") })}\n`);
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    fs.utimesSync(lockFile, old, old);
    const actual = vi.mocked(fs.renameSync).getMockImplementation()!;
    vi.mocked(fs.renameSync).mockImplementationOnce((from, to) => {
      actual(from, to);
      // Another process's session/list meets the aside name now: a stale leftover to it.
      expect(skipTemp(dir, path.basename(String(to)))).toBe(true);
      expect(fs.existsSync(to)).toBe(false);
    });
    const lock = acquireLock(lockFile, "a");
    expect(ownerLine(lock.file)).toMatchObject({ pid: process.pid });
    releaseLock(lock);
  });

  it("a stale lock replaced by a live one between the look and the take-over is put back, and the session is locked", () => {
    const lockFile = path.join(dir, "a.lock");
    const dead = spawnSync("true").pid;
    fs.writeFileSync(lockFile, `${JSON.stringify({ pid: dead, start: "", host: os.hostname(), pidns: fs.readlinkSync("/proc/self/ns/pid") })}\n`);
    // A live process (this one's parent) takes it over first: its lock may even get the stale
    // file's inode number; its mtime is its own write's.
    const live = `${JSON.stringify({ pid: process.ppid, start: "", host: os.hostname() })}\n`;
    const actual = vi.mocked(fs.lstatSync).getMockImplementation()!;
    let swapped = false;
    vi.mocked(fs.lstatSync).mockImplementation(((file: fs.PathLike, options?: fs.StatSyncOptions) => {
      const st = actual(file, options as never) as fs.Stats;
      if (file === lockFile && !swapped) {
        swapped = true;
        fs.rmSync(lockFile);
        fs.writeFileSync(lockFile, live);
        const later = new Date(Date.now() + 5_000);
        fs.utimesSync(lockFile, later, later);
      }
      return st;
    }) as typeof fs.lstatSync);
    try {
      expect(() => acquireLock(lockFile, "a")).toThrow(SessionLockedError);
    } finally {
      vi.mocked(fs.lstatSync).mockImplementation(actual);
    }
    expect(swapped).toBe(true);
    expect(fs.readFileSync(lockFile, "utf8")).toBe(live);
    expect(fs.readdirSync(dir).filter((n) => isTempName(n))).toEqual([]);
  });

  it("an owner file removed by hand is made again", () => {
    releaseLock(acquireLock(path.join(dir, "a.lock"), "a"));
    fs.rmSync(path.join(dir, owners()[0]));
    const again = acquireLock(path.join(dir, "a.lock"), "a");
    expect(ownerLine(again.file)).toMatchObject({ pid: process.pid });
    expect(owners()).toHaveLength(1);
    releaseLock(again);
  });

  it("on a file system without hard links (EPERM), the lock is a file of its own holding the owner, and still exclusive", () => {
    vi.mocked(fs.linkSync).mockImplementation(() => {
      throw Object.assign(new Error("EPERM: operation not permitted, link"), { code: "EPERM" });
    });
    try {
      const lock = acquireLock(path.join(dir, "a.lock"), "a");
      expect(fs.statSync(lock.file).nlink).toBe(1);
      expect(ownerLine(lock.file)).toMatchObject({ pid: process.pid });
      expect(() => acquireLock(lock.file, "a")).toThrow(SessionLockedError);
      releaseLock(lock);
      expect(fs.existsSync(lock.file)).toBe(false);
      releaseLock(acquireLock(lock.file, "a"));
      expect(fs.existsSync(lock.file)).toBe(false);
    } finally {
      vi.mocked(fs.linkSync).mockReset();
    }
  });
});
