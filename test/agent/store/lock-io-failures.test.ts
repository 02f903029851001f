/**
 * A session's lock when an I/O call on its log fails: it is let go, never kept for good.
 * - `close(2)` fails: on NFS (a session root on a shared volume) close reports a write the server
 *   refused late (EIO, EDQUOT, ENOSPC). The lock the close took for its trim must still be let
 *   go: kept, it would name this live process for good, and every later prompt of the session,
 *   this bridge's own too, is refused `session-locked` until the bridge exits.
 * - The check after a fresh turn lock fails (file-store.ts `lock`: `current`; an I/O error, the
 *   folder's permissions changed under it): the turn does not start, and the lock must not stay
 *   held: held and marked as a turn's, no linger would ever let it go, and the next `lock` would
 *   find it held since "this process's last turn" and skip the very check that failed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { SessionStore } from "../../../src/agent/store/index.js";
import { lockLetGo } from "../../support/session-locks.js";
import { header, userMessage } from "./support.js";
import { lockPathOf } from "../../../src/agent/store/log-format.js";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return { ...actual, closeSync: vi.fn(actual.closeSync), lstatSync: vi.fn(actual.lstatSync) };
});
const close = vi.mocked(fs.closeSync);
const realClose = close.getMockImplementation()!;
const lstat = vi.mocked(fs.lstatSync);
const realLstat = lstat.getMockImplementation()!;

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lock-io-"));
});
afterEach(() => {
  close.mockImplementation(realClose);
  lstat.mockImplementation(realLstat);
  fs.rmSync(tmp, { recursive: true, force: true });
});

it("a log whose close fails (EIO) still lets the lock its trim took go: the session can be opened again", async () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("s", header);
  expect(log.lock()).toBe(true);
  log.append(userMessage(1));
  log.sync();
  log.unlock();
  const lockFile = lockPathOf(store.pathOf("s"));
  await lockLetGo(lockFile); // past the linger: the close takes the lock afresh for its trim, no timer lets it go
  const logFd = (log as unknown as { fd: number }).fd;
  let failed = false;
  close.mockImplementation((fd) => {
    realClose(fd); // the descriptor is gone whatever close says (Linux frees it)
    if (fd !== logFd || failed) return;
    failed = true;
    throw Object.assign(new Error("EIO: i/o error, close"), { code: "EIO" });
  });
  expect(() => log.close()).toThrow(/EIO/);
  expect(failed).toBe(true);
  expect(fs.existsSync(lockFile)).toBe(false);
  const again = store.open("s", header);
  expect(again.loadedEvents.map((e) => e.seq)).toEqual([1]);
  again.close();
});

it("a failed check of the log after a fresh lock lets the lock go, and the next turn checks the log again", async () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("s", header);
  expect(log.lock()).toBe(true);
  log.append(userMessage(1));
  log.unlock();
  const file = store.pathOf("s");
  const lockFile = lockPathOf(file);
  await lockLetGo(lockFile);
  lstat.mockImplementationOnce(((p: fs.PathLike, o?: fs.StatSyncOptions) => {
    if (p !== file) return realLstat(p, o);
    throw Object.assign(new Error(`EIO: i/o error, lstat '${file}'`), { code: "EIO" });
  }) as typeof fs.lstatSync);
  expect(() => log.lock()).toThrow(/EIO/);
  expect(fs.existsSync(lockFile)).toBe(false);
  // Another process writes the log meanwhile: the next turn must see it.
  fs.appendFileSync(file, `${JSON.stringify(userMessage(2))}\n`);
  lstat.mockClear();
  expect(log.lock()).toBe(false); // not current: the caller reloads the session
  expect(lstat.mock.calls.map((call) => call[0])).toContain(file);
  log.close();
});
