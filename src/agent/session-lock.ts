/**
 * One writer per session across processes: an advisory lock file beside each session log,
 * `<sessionId>.lock`, held while a process writes the session (a turn, a compaction, a fork's
 * or a delete's moment) and removed when it stops. Node has no `flock`/`fcntl`, and a native
 * helper is not worth a binary per platform, so the lock is a file created with `O_EXCL`
 * (atomic on local file systems) holding its owner: `{"pid","start","host"}`.
 *
 * A crashed owner (SIGKILL, a power cut) leaves its lock file behind; that must not block the
 * session for good. A lock is stale when its owner is provably gone: same host, and the pid
 * does not exist, or it exists but started at another time than the owner did (the pid was
 * reused: the start time is field 22 of `/proc/<pid>/stat`, in clock ticks since boot). A
 * stale lock is taken over: renamed away (atomic), checked to be the very file judged stale
 * (same inode), removed, and the `O_EXCL` create tried again, so of two processes taking
 * over at once one gets it and the other is refused. A lock file without a whole owner line
 * (its creator was killed between create and write) is stale once it is 10 s old.
 *
 * What this cannot tell: an owner on another host (a session root shared over NFS) or in
 * another pid namespace is taken as alive; the error names the lock file to remove by hand.
 * Without `/proc` (macOS), a reused pid is taken as alive until that process ends.
 *
 * Every lock this process holds is removed at exit (`process.on("exit")`), so a bridge that
 * ends by a signal or `process.exit` leaves none behind.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";

/** Who holds a lock. */
export interface LockOwner {
  pid: number;
  /** The process's start time (`/proc/<pid>/stat` field 22), or "" where there is no `/proc`. */
  start: string;
  host: string;
}

/** Thrown when another live process holds a session's lock. */
export class SessionLockedError extends Error {
  constructor(
    readonly sessionId: string,
    readonly lockFile: string,
    readonly owner: LockOwner | undefined,
  ) {
    const who = owner ? `process ${owner.pid}${owner.host === SELF.host ? "" : ` on ${owner.host}`}` : "another process";
    super(
      `session ${sessionId} is open for writing in ${who} (another bridge on the same session root); ` +
        `retry once it is done with it, or remove ${lockFile} if no such bridge runs`,
    );
    this.name = "SessionLockedError";
  }
}

/** A lock this process holds: the inode of its file, so only that file is ever removed. */
export interface HeldLock {
  readonly file: string;
  readonly ino: number;
}

/** An owner line without its newline yet is this young at most (its writer is between create and write). */
const UNWRITTEN_GRACE_MS = 10_000;

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces and ")": count after the last.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

const SELF: LockOwner = { pid: process.pid, start: startTimeOf(process.pid) ?? "", host: os.hostname() };

/** Whether the owner of a lock may still be running. */
function alive(owner: LockOwner): boolean {
  if (owner.host !== SELF.host) return true; // another machine's process: nothing here can tell
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    // EPERM: it exists (another user's); go on to its start time
  }
  const start = startTimeOf(owner.pid);
  return !(start !== undefined && owner.start !== "" && start !== owner.start);
}

function parseOwner(text: string): LockOwner | undefined {
  if (!text.endsWith("\n")) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (Number.isSafeInteger(value.pid) && typeof value.start === "string" && typeof value.host === "string") return value as LockOwner;
  } catch {
    // not a whole owner line
  }
  return undefined;
}

/** The lock file's inode, owner and age; `undefined` when it is gone. */
function holderOf(file: string): { ino: number; owner: LockOwner | undefined; mtimeMs: number } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const stat = fs.fstatSync(fd);
    const buffer = Buffer.alloc(Math.min(stat.size, 4096));
    const read = fs.readSync(fd, buffer, 0, buffer.length, 0);
    return { ino: stat.ino, owner: parseOwner(buffer.toString("utf8", 0, read)), mtimeMs: stat.mtimeMs };
  } finally {
    fs.closeSync(fd);
  }
}

/** Moves the stale lock `ino` out of the way; a fresh lock moved by mistake (a race) is put back. */
function removeStale(file: string, ino: number): void {
  const aside = `${file}.stale-${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    if (fs.lstatSync(file).ino !== ino) return; // taken over meanwhile: judge it afresh
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    if (fs.lstatSync(aside).ino !== ino) {
      try {
        fs.linkSync(aside, file); // another process's fresh lock: back where it was
      } catch {
        // a third process created one meanwhile; it holds the lock now
      }
    }
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

const held = new Map<string, HeldLock>();
let exitHook = false;

/** Takes the lock `file` for `sessionId`, or throws `SessionLockedError` when a live process holds it. */
export function acquireLock(file: string, sessionId: string): HeldLock {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  let owner: LockOwner | undefined;
  for (let attempt = 0; attempt < 4; attempt++) {
    let fd: number;
    try {
      fd = fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = holderOf(file);
      if (!holder) continue; // released meanwhile
      owner = holder.owner;
      const live = owner ? alive(owner) : Date.now() - holder.mtimeMs < UNWRITTEN_GRACE_MS;
      if (live) throw new SessionLockedError(sessionId, file, owner);
      removeStale(file, holder.ino);
      continue;
    }
    let lock: HeldLock;
    try {
      const line = Buffer.from(`${JSON.stringify(SELF)}\n`);
      for (let off = 0; off < line.length; ) off += fs.writeSync(fd, line, off, line.length - off);
      lock = { file, ino: fs.fstatSync(fd).ino };
    } catch (error) {
      fs.rmSync(file, { force: true });
      throw error;
    } finally {
      fs.closeSync(fd);
    }
    held.set(file, lock);
    if (!exitHook) {
      exitHook = true;
      process.on("exit", () => {
        for (const lock of [...held.values()]) releaseLock(lock);
      });
    }
    return lock;
  }
  throw new SessionLockedError(sessionId, file, owner);
}

/** Removes the lock file, when it is still the one `lock` created (never another process's). */
export function releaseLock(lock: HeldLock): void {
  if (held.get(lock.file) === lock) held.delete(lock.file);
  try {
    if (fs.lstatSync(lock.file).ino === lock.ino) fs.unlinkSync(lock.file);
  } catch {
    // gone already (a delete removed the folder's files, or a hand did)
  }
}
