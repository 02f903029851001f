/**
 * Closing a log whose `close(2)` fails: on NFS (a session root on a shared volume) close reports
 * a write the server refused late (EIO, EDQUOT, ENOSPC). The lock the close took for its trim
 * must still be let go: kept, it would name this live process for good, and every later prompt
 * of the session, this bridge's own too, is refused `session-locked` until the bridge exits.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { SessionStore } from "../../../src/agent/store/index.js";
import { lockLetGo } from "../../support/session-locks.js";
import { header, userMessage } from "./support.js";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return { ...actual, closeSync: vi.fn(actual.closeSync) };
});
const close = vi.mocked(fs.closeSync);
const realClose = close.getMockImplementation()!;

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-close-failure-"));
});
afterEach(() => {
  close.mockImplementation(realClose);
  fs.rmSync(tmp, { recursive: true, force: true });
});

it("a log whose close fails (EIO) still lets the lock its trim took go: the session can be opened again", async () => {
  const store = new SessionStore(tmp, "/work/space");
  const log = store.open("s", header);
  expect(log.lock()).toBe(true);
  log.append(userMessage(1));
  log.sync();
  log.unlock();
  const lockFile = store.pathOf("s").replace(/\.jsonl$/, ".lock");
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
