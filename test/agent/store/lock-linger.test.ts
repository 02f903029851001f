/**
 * A session's lock lingers after a turn (store/lock.ts `LOCK_LINGER_MS`, file-store.ts
 * `unlock`): a loop of turns takes it once and checks no file a turn; it is let go a moment
 * after the last turn, and at once on close. Another process that wants the session waits that
 * moment out (`acquireLock`, up to `LOCK_WAIT_MS`) instead of being refused.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SessionStore } from "../../../src/agent/store/index.js";
import { acquireLock, LOCK_LINGER_MS, LOCK_WAIT_MS, releaseLock, SessionLockedError } from "../../../src/agent/store/lock.js";
import { lockLetGo } from "../../support/session-locks.js";
import { header, userMessage } from "./support.js";
import { checkpointsPathOf, lockPathOf, metaPathOf } from "../../../src/agent/store/log-format.js";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return { ...actual, linkSync: vi.fn(actual.linkSync), lstatSync: vi.fn(actual.lstatSync) };
});
const link = vi.mocked(fs.linkSync);
const lstat = vi.mocked(fs.lstatSync);
const realLink = link.getMockImplementation()!;

let tmp: string;
let sleeper: ChildProcess | undefined;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-linger-"));
});
afterEach(() => {
  vi.useRealTimers();
  link.mockImplementation(realLink);
  link.mockClear();
  lstat.mockClear();
  sleeper?.kill("SIGKILL");
  sleeper = undefined;
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A turn of `log`: lock, one line, sync, unlock. */
function turn(log: ReturnType<SessionStore["open"]>, seq: number): void {
  expect(log.lock()).toBe(true);
  log.append(userMessage(seq));
  log.sync();
  log.unlock();
}

describe("a session's lock after a turn", () => {
  it("a loop of turns takes it once and checks no file a turn; it is let go LOCK_LINGER_MS after the last, then the next turn takes it and checks the log", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    const file = store.pathOf("s");
    const lockFile = lockPathOf(file);
    turn(log, 1);
    link.mockClear();
    lstat.mockClear();
    for (let seq = 2; seq <= 6; seq++) {
      await Promise.resolve(); // the next request comes in another task
      vi.advanceTimersByTime(LOCK_LINGER_MS - 1);
      turn(log, seq);
    }
    expect(link).not.toHaveBeenCalled();
    expect(lstat).not.toHaveBeenCalled();
    expect(fs.existsSync(lockFile)).toBe(true);
    vi.advanceTimersByTime(LOCK_LINGER_MS);
    expect(fs.existsSync(lockFile)).toBe(false);
    // Let go: the next turn takes the lock again, and checks that nobody wrote the log meanwhile.
    turn(log, 7);
    expect(link).toHaveBeenCalledTimes(1);
    expect(lstat.mock.calls.map((call) => call[0])).toContain(file);
    expect(fs.existsSync(lockFile)).toBe(true);
    log.close(); // lets go at once, no timer
    expect(fs.existsSync(lockFile)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    const again = store.open("s", header);
    expect(again.loadedEvents.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    again.close();
  });

  it("every burst of turns lets its lock go after its last turn, not only the first burst (node's own timers: a cleared one is not re-armed)", async () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    const lockFile = lockPathOf(store.pathOf("s"));
    for (let burst = 0; burst < 3; burst++) {
      turn(log, 2 * burst + 1);
      turn(log, 2 * burst + 2);
      expect(fs.existsSync(lockFile), `burst ${burst + 1}, kept`).toBe(true);
      await lockLetGo(lockFile);
    }
    log.close();
  });

  it("a turn still running when the linger ends keeps the lock: only the end of the last turn starts it", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    const lockFile = lockPathOf(store.pathOf("s"));
    turn(log, 1);
    expect(log.lock()).toBe(true); // a long turn begins
    vi.advanceTimersByTime(10 * LOCK_LINGER_MS);
    expect(fs.existsSync(lockFile)).toBe(true);
    log.append(userMessage(2));
    log.unlock();
    vi.advanceTimersByTime(LOCK_LINGER_MS);
    expect(fs.existsSync(lockFile)).toBe(false);
    log.close();
  });

  it("the real timer lets it go, and keeps no process alive", async () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    turn(log, 1);
    await lockLetGo(lockPathOf(store.pathOf("s")));
    log.close();
  });
});

describe("a lock kept after a turn, while this process does long work on another session's log", () => {
  // A log is loaded and a fork copied and synced synchronously, in time with its size: another
  // process wanting the kept session meanwhile waits only LOCK_WAIT_MS, and the timer that lets
  // the lock go cannot fire until that work is done.
  function kept(store: SessionStore): { log: ReturnType<SessionStore["open"]>; lockFile: string } {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const other = store.open("other", header);
    turn(other, 1);
    other.close();
    const log = store.open("s", header);
    turn(log, 1);
    const lockFile = lockPathOf(store.pathOf("s"));
    expect(fs.existsSync(lockFile)).toBe(true);
    return { log, lockFile };
  }

  it("loading another session's log lets it go first", () => {
    const store = new SessionStore(tmp, "/work/space");
    const { log, lockFile } = kept(store);
    store.open("other", header).close();
    expect(fs.existsSync(lockFile)).toBe(false);
    turn(log, 2); // taken again, the log checked
    log.close();
  });

  it("forking another session lets it go first; forking the kept session itself keeps it", () => {
    const store = new SessionStore(tmp, "/work/space");
    const { log, lockFile } = kept(store);
    expect(store.fork("s", "s-copy", undefined)).toBeUndefined();
    expect(fs.existsSync(lockFile)).toBe(true);
    expect(store.fork("other", "other-copy", undefined)).toBeUndefined();
    expect(fs.existsSync(lockFile)).toBe(false);
    log.close();
  });

  it("listing the sessions lets it go before it scans a log whose meta is not current (another bridge's open log, read whole each listing); a listing from the metas alone keeps it", () => {
    const store = new SessionStore(tmp, "/work/space");
    const { log, lockFile } = kept(store);
    expect(store.list().sessions.map((e) => e.sessionId).sort()).toEqual(["other", "s"]); // "other"'s meta is current
    expect(fs.existsSync(lockFile)).toBe(true);
    fs.rmSync(metaPathOf(store.pathOf("other"))); // as for a log another bridge has open: scanned
    expect(store.list().sessions.map((e) => e.sessionId).sort()).toEqual(["other", "s"]);
    expect(fs.existsSync(lockFile)).toBe(false);
    turn(log, 2); // taken again, the log checked
    log.close();
  });

  it("deleting another session lets it go first: its checkpoints, removed under its lock, are as many files as its turns changed", () => {
    const store = new SessionStore(tmp, "/work/space");
    const { log, lockFile } = kept(store);
    const checkpoints = checkpointsPathOf(store.pathOf("other"));
    fs.mkdirSync(path.join(checkpoints, "blobs"), { recursive: true });
    for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(checkpoints, "blobs", `b${i}`), "x");
    expect(store.delete("other")).toBe(true);
    expect(fs.existsSync(checkpoints)).toBe(false);
    expect(fs.existsSync(lockFile)).toBe(false);
    turn(log, 2); // taken again, the log checked
    log.close();
  });
});

describe("a lock another live process holds", () => {
  /** A lock file at `file` naming a live process (`sleep`) of this host, as a bridge's would. */
  function heldByAnother(file: string): void {
    sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    const stat = fs.readFileSync(`/proc/${sleeper.pid}/stat`, "latin1");
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    fs.writeFileSync(file, `${JSON.stringify({ pid: sleeper.pid, start, host: os.hostname() })}\n`);
  }

  /** Another process's lock at `file` is let go at this process's `at`th try to take it; `before` runs just before (what this process holds while it waits). Returns the tries so far. */
  function letGoAtTry(file: string, at: number, before: () => void = () => undefined): () => number {
    let tries = 0;
    link.mockImplementation((from, to) => {
      if (to === file && ++tries === at) {
        before();
        fs.unlinkSync(file);
      }
      realLink(from, to);
    });
    return () => tries;
  }

  it("is waited for while it lets go (a bridge's lingering lock): taken, not refused", () => {
    const file = path.join(tmp, "a.lock");
    heldByAnother(file);
    const tries = letGoAtTry(file, 3); // the holder lets go while this one waits
    const lock = acquireLock(file, "a");
    expect(tries()).toBe(3);
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toMatchObject({ pid: process.pid });
    releaseLock(lock);
  });

  it("is refused once it has held on for LOCK_WAIT_MS, and left where it is", () => {
    const file = path.join(tmp, "a.lock");
    heldByAnother(file);
    const before = fs.readFileSync(file, "utf8");
    const started = performance.now();
    expect(() => acquireLock(file, "a")).toThrow(SessionLockedError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(LOCK_WAIT_MS - 1); // a lower bound: it waited
    expect(fs.readFileSync(file, "utf8")).toBe(before);
  });

  it("a process about to wait first lets go of the locks its sessions keep after their turns: its linger timers cannot fire while it blocks, so two bridges each waiting for a session the other keeps would both be refused", () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    turn(log, 1);
    const mine = lockPathOf(store.pathOf("s"));
    expect(fs.existsSync(mine)).toBe(true); // lingering
    const theirs = lockPathOf(store.pathOf("t"));
    heldByAnother(theirs);
    let mineWhileWaiting: boolean | undefined;
    // The second try comes after one wait: the other process wanting s has been waiting for it too.
    letGoAtTry(theirs, 2, () => (mineWhileWaiting = fs.existsSync(mine)));
    releaseLock(acquireLock(theirs, "t"));
    expect(mineWhileWaiting).toBe(false);
    // Let go: s's next turn takes its lock again and checks its log.
    lstat.mockClear();
    turn(log, 2);
    expect(lstat.mock.calls.map((call) => call[0])).toContain(store.pathOf("s"));
    log.close();
  });

  it("a fork of a session this process keeps the lock of, into one another process holds a moment, keeps the source's lock while it waits for the other", () => {
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    turn(log, 1);
    const source = lockPathOf(store.pathOf("s"));
    const target = lockPathOf(store.pathOf("f"));
    heldByAnother(target);
    let sourceWhileWaiting: boolean | undefined;
    letGoAtTry(target, 2, () => (sourceWhileWaiting = fs.existsSync(source)));
    expect(store.fork("s", "f", undefined)).toBeUndefined();
    expect(sourceWhileWaiting).toBe(true);
    expect(fs.existsSync(source)).toBe(true); // still kept after the turn, as before the fork
    log.close();
    expect(fs.existsSync(source)).toBe(false);
  });

  it("closing a log does not wait for its lock when another live process holds it: the trim is best effort (left to the next load), and a bridge closes logs by the dozen (shutdown, idle ones dropped at a turn's end)", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const store = new SessionStore(tmp, "/work/space");
    const log = store.open("s", header);
    turn(log, 1);
    vi.advanceTimersByTime(LOCK_LINGER_MS); // let go: the log is open, its lock not held
    const lockFile = lockPathOf(store.pathOf("s"));
    expect(fs.existsSync(lockFile)).toBe(false);
    heldByAnother(lockFile); // another bridge's turn on s
    const before = fs.readFileSync(lockFile, "utf8");
    link.mockClear();
    log.close();
    expect(link.mock.calls.filter((call) => call[1] === lockFile)).toHaveLength(1); // one try, no wait
    expect(fs.readFileSync(lockFile, "utf8")).toBe(before);
  });

  it("the wait is bounded by a monotonic clock: the wall clock set back meanwhile (NTP, by hand) does not make it longer", () => {
    const file = path.join(tmp, "a.lock");
    heldByAnother(file);
    const now = Date.now;
    let reads = 0;
    // The wall clock is set back an hour just after the wait began.
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now() - (++reads > 1 ? 3_600_000 : 0));
    let tries = 0;
    link.mockImplementation((from, to) => {
      if (to === file && ++tries === 1000) fs.unlinkSync(file); // a bound for the test: ~1 s of tries
      realLink(from, to);
    });
    try {
      expect(() => acquireLock(file, "a")).toThrow(SessionLockedError);
    } finally {
      clock.mockRestore();
    }
    expect(tries).toBeLessThan(1000);
  });

  it("this process's own lock is refused at once, with no wait for a let-go that cannot come while it blocks", () => {
    const file = path.join(tmp, "a.lock");
    const lock = acquireLock(file, "a");
    link.mockClear();
    expect(() => acquireLock(file, "a")).toThrow(SessionLockedError);
    expect(link).toHaveBeenCalledTimes(1); // one try, no retries
    releaseLock(lock);
  });
});
