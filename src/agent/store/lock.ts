/**
 * One writer per session across processes: an advisory lock file beside each session log,
 * `<sessionId>.lock`, held while a process writes the session (a turn, a compaction, a fork's
 * or a delete's moment) and removed when it stops; a turn's lingers `LOCK_LINGER_MS` (below),
 * and another process waits up to `LOCK_WAIT_MS` for a live holder. Node has no `flock`/`fcntl`, and a native
 * helper is not worth a binary per platform, so the lock is a name made atomically (fails when
 * it exists) whose file holds its owner: `{"pid","start","host","pidns"}`.
 *
 * How the name is made: as a hard link to this process's owner file in that folder,
 * `@owner-<pid>-<random>` ('@' is in no session id), written once (whole, before any lock
 * names it) and removed at exit. `link(2)` only adds a name to an existing inode, where an
 * `O_EXCL` create allocates an inode and writes it, and each turn's fsync commits whatever the
 * file system changed since the last one: the create cost a turn about three times what the
 * link does (bench/README.md). On a file system without hard links (`EPERM`), the lock is a
 * file created `O_EXCL` and written, as before.
 *
 * A crashed owner (SIGKILL, a power cut) leaves its lock file behind; that must not block the
 * session for good. A lock is stale when its owner is provably gone (process-owner.ts: same
 * host and pid namespace, and the pid gone or reused by a process of another start time). A
 * stale lock is taken over: renamed away (atomic), checked to be the very file judged stale
 * (same inode and mtime: `HeldLock` says why not the inode alone), removed, and the `O_EXCL`
 * create tried again, so of two processes taking over at once one gets it and the other is
 * refused. (A residue: POSIX has no "unlink if this
 * inode", so a fresh lock moved aside by a slower taker-over is linked back, and a third
 * process creating one in that instant — microseconds — would leave two holders. Two bridges
 * cannot meet it; three racing for the same stale lock in the same instant could.) A lock file without a whole owner line
 * (its creator was killed between create and write) is stale once it is 10 s old.
 *
 * What this cannot tell: an owner on another host (a session root shared over NFS) or in
 * another pid namespace (a container on a shared volume), or written or read without `/proc` on
 * a machine that has it (process-owner.ts `seenHere`), is taken as alive; the error names the lock file to remove by hand,
 * and the command of a live owner on this host, so a lock naming a process that is no bridge
 * (planted, or left by a bridge whose pid and start time another process now has — which
 * `/proc` rules out) is told apart. Without `/proc` (macOS), a reused pid is taken as alive
 * until that process ends.
 *
 * What a lock file is never taken as: a symlink, a folder or any other non-regular file (no
 * bridge makes one; it is refused with what it is, never followed or removed); an owner line
 * whose pid could not be a process (0, negative, beyond pid_t) names no owner, and is stale
 * after the grace like a half-written one; an mtime in the future does not keep a lock young;
 * a lock naming this very process, which does not hold it, is stale. A lock that cannot be
 * created (a read-only or foreign session folder) is a `SessionLogError` naming the file and
 * the errno, never a raw one.
 *
 * Every lock this process holds, and its owner files, are removed at exit
 * (`process.on("exit")`), so a bridge that ends by a signal or `process.exit` leaves none
 * behind; one killed (SIGKILL) leaves its owner file, a few dozen bytes, like its lock: a later
 * `session/list` of the folder removes it once its process is gone (`skipOwnerFile`).
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { tempSibling } from "../../temp-name.js";
import { isOutOfDescriptors } from "../../tools/out-of-descriptors.js";
import { openForReading, SessionLogError, writeAll } from "./log-format.js";
import { alive, commandOf, ownerLine, readOwner, seenHere, SELF, type ProcessOwner } from "./process-owner.js";

/** Thrown when another live process holds a session's lock. */
export class SessionLockedError extends Error {
  constructor(
    readonly sessionId: string,
    readonly lockFile: string,
    readonly owner: ProcessOwner | undefined,
  ) {
    // The command of a live owner here tells a bridge from a process a planted lock names.
    const command = owner && seenHere(owner) ? commandOf(owner.pid) : undefined;
    const namespace = owner?.pidns && SELF.pidns ? `another pid namespace (${owner.pidns})` : "a pid namespace this process cannot tell (one of the two has no /proc)";
    const where = !owner || seenHere(owner) ? "" : owner.host === SELF.host ? ` in ${namespace}` : ` on ${owner.host}`;
    const who = owner
      ? `process ${owner.pid}${command ? ` (command ${JSON.stringify(command)})` : ""}${where}`
      : `another process (its lock file names no owner yet: being created, or not a bridge's; taken over ${UNWRITTEN_GRACE_MS / 1000} s after its last write)`;
    super(
      `session ${sessionId} is open for writing in ${who}, another bridge on the same session root by its lock file; ` +
        `retry once it is done with it, or remove ${lockFile} if no such bridge runs`,
    );
    this.name = "SessionLockedError";
  }
}

/**
 * A lock this process holds: the identity of its file, so only that file is ever removed. An
 * inode number alone is no identity: once the lock and its owner file are removed from under
 * the holder (by hand), the number is free, and the file system may give it to the next file
 * made there — another process's lock. That file's mtime is its own write's, not the owner
 * file's (written once, at its creation, and never again: a link does not change it), so the
 * pair tells them apart, read from the one `lstat` release makes anyway: no syscall more.
 */
export interface HeldLock {
  readonly file: string;
  readonly ino: number;
  readonly mtimeMs: number;
}

/** Whether `st` (of a lock's name) is the very file `lock` identifies. */
const isFileOf = (st: { ino: number; mtimeMs: number }, lock: { ino: number; mtimeMs: number }) => st.ino === lock.ino && st.mtimeMs === lock.mtimeMs;

/** An owner line without its newline yet is this young at most (its writer is between create and write). */
const UNWRITTEN_GRACE_MS = 10_000;
/** Why `file` is not a lock any bridge made: never followed, taken over or removed, only named. */
function notALock(sessionId: string, file: string, what: string): SessionLogError {
  return new SessionLogError(`session ${sessionId}'s lock file ${file} is ${what}, which no bridge makes; it is neither followed nor removed: move it away to use the session`);
}

/** The lock file's identity (inode, mtime), owner and age; `undefined` when it is gone. */
function holderOf(file: string, sessionId: string): { ino: number; owner: ProcessOwner | undefined; mtimeMs: number } | undefined {
  let fd: number;
  try {
    fd = openForReading(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP") throw notALock(sessionId, file, "a symbolic link");
    throw cannot(sessionId, file, "read", error);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw notALock(sessionId, file, stat.isDirectory() ? "a folder" : "not a regular file (a FIFO, socket or device)");
    return { ino: stat.ino, owner: readOwner(fd, stat.size), mtimeMs: stat.mtimeMs };
  } finally {
    fs.closeSync(fd);
  }
}

/** Moves the stale lock `stale` out of the way; a fresh lock moved by mistake (a race) is put back. */
function removeStale(file: string, stale: { ino: number; mtimeMs: number }): void {
  // A name of this take-over's own; left by a kill before the removal below, a listing removes it once stale (temp-name.ts).
  const aside = tempSibling(file);
  try {
    if (!isFileOf(fs.lstatSync(file), stale)) return; // taken over meanwhile: judge it afresh
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    // Gone already: a listing removed it as a stale temporary (temp-name.ts), which only an old
    // file is — the stale lock itself, never a fresh one moved by mistake. Nothing to put back.
    const moved = fs.lstatSync(aside, { throwIfNoEntry: false });
    if (moved && !isFileOf(moved, stale)) {
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

/**
 * A lock file that could not be created or read (a read-only or foreign folder, a full disk):
 * named, with its errno. Running out of descriptors (EMFILE, ENFILE) is no fault of the lock
 * file and passes through as it is: the turn admission waits for descriptors on that code.
 */
function cannot(sessionId: string, file: string, what: "create" | "read" | "take over", error: unknown): Error {
  if (isOutOfDescriptors(error)) return error as NodeJS.ErrnoException;
  const code = (error as NodeJS.ErrnoException).code ?? "";
  const why: Record<string, string> = { EACCES: "permission denied", EPERM: "not permitted", EROFS: "read-only file system", ENOSPC: "no space left" };
  return new SessionLogError(`cannot ${what} session ${sessionId}'s lock file ${file}: ${code}${why[code] ? ` (${why[code]})` : ""}; a session is written only under its lock`);
}

const held = new Map<string, HeldLock>();
let exitHook = false;

/** This process's owner file in each folder it took a lock in; `null`: that folder's file system has no hard links. */
const owners = new Map<string, HeldLock | null>();

/** Errors of `link(2)` on a file system without hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP"]);

/** Creates `file` (`O_EXCL`, never through a symlink) holding this process's owner line; its identity, or `undefined` when the name is taken. */
function writeOwnerFile(file: string): HeldLock | undefined {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  let fd: number;
  try {
    fd = fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
    throw error;
  }
  try {
    writeAll(fd, ownerLine());
    // After the write: the file's mtime is final (nothing writes it again).
    const { ino, mtimeMs } = fs.fstatSync(fd);
    return { file, ino, mtimeMs };
  } catch (error) {
    fs.rmSync(file, { force: true }); // a full disk: no half-written owner is left
    throw error;
  } finally {
    fs.closeSync(fd);
  }
}

/** This process's owner file in `folder`, made on first use (a random name: one planted there is never written through). */
function ownerFileIn(folder: string): HeldLock {
  for (;;) {
    const file = path.join(folder, `@owner-${process.pid}-${randomUUID().slice(0, 8)}`);
    const owner = writeOwnerFile(file);
    if (owner) return owner;
  }
}

/**
 * For a scan of a session folder (`session/list`) meeting the file `name`: `true` when it is an
 * owner file (skipped), removed first if a kill left it: its process is gone as a lock's owner
 * is judged (`alive`), or it is half-written past the grace. Its name is that process's alone, so
 * no newer file took it; locks linked to it keep their names; a live owner's file removed anyway
 * (by hand too) is made again at its next lock (`makeLock`).
 */
export function skipOwnerFile(folder: string, name: string, now = Date.now()): boolean {
  if (!name.startsWith("@owner-")) return false;
  const file = path.join(folder, name);
  try {
    const fd = openForReading(file);
    let gone: boolean;
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) return true; // no bridge made it: left as it is
      const owner = readOwner(fd, stat.size);
      gone = owner ? !alive(owner) : Math.abs(now - stat.mtimeMs) >= UNWRITTEN_GRACE_MS;
    } finally {
      fs.closeSync(fd);
    }
    if (gone) fs.unlinkSync(file);
  } catch {
    // gone already, a link, or not ours to remove: left as it is
  }
  return true;
}

/**
 * Makes the lock name `file` for this process: a link to its owner file, or (no hard links
 * there) a file of its own. `undefined` when the name exists.
 */
function makeLock(file: string): HeldLock | undefined {
  const folder = path.dirname(file);
  if (!owners.has(folder)) {
    owners.set(folder, ownerFileIn(folder));
    hookExit();
  }
  const owner = owners.get(folder);
  if (owner) {
    try {
      fs.linkSync(owner.file, file);
      // A link names the inode its source names: the owner file's, which this process made
      // (`O_EXCL`, a random name) and never replaces, so its identity needs no stat of the new
      // name. Release removes the name only while it is still this file.
      return { file, ino: owner.ino, mtimeMs: owner.mtimeMs };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (code === "EEXIST") return undefined;
      if (code === "ENOENT" && fs.existsSync(folder)) {
        owners.delete(folder); // the owner file was removed (by hand): make another
        return makeLock(file);
      }
      if (!NO_HARD_LINKS.has(code)) throw error;
      owners.set(folder, null);
    }
  }
  return writeOwnerFile(file);
}

/** Every lock this process holds, and its owner files, are removed when it exits (signals, `process.exit`). */
function hookExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const lock of [...held.values()]) releaseLock(lock);
    for (const owner of owners.values()) if (owner) removeIfStill(owner);
  });
}

/** Removes `lock.file` if it still is the file `lock` made (never another process's). */
function removeIfStill(lock: HeldLock): void {
  try {
    if (isFileOf(fs.lstatSync(lock.file), lock)) fs.unlinkSync(lock.file);
  } catch {
    // gone already (a delete removed the folder's files, or a hand did)
  }
}

/** Whether this process holds the lock file `holder` (its inode and mtime). */
const holding = (file: string, holder: { ino: number; mtimeMs: number }) => {
  const lock = held.get(file);
  return lock !== undefined && isFileOf(holder, lock);
};

/**
 * How long a log keeps its lock after a turn ends (file-store.ts `unlock`): the next turn of a
 * loop of turns finds it held, and takes no lock and checks no file. Why that matters: a lock is
 * a name made and removed in the session folder, and on ext4 without a journal each `fdatasync`
 * of the log also writes the 4 KiB block of inodes the log shares with that folder's and the
 * owner file's, whose inodes the name changed (bench/README.md, round 16).
 */
export const LOCK_LINGER_MS = 5;
/**
 * How long a process waits for a live holder to let go before it is refused: past a holder's
 * linger after its last turn, with room for its event loop to be late. Only a lock held by
 * another live process waits; this process's own, or a stale one, is answered at once.
 */
export const LOCK_WAIT_MS = 50;
/** Between two tries for a lock a live process holds. */
const LOCK_RETRY_MS = 1;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The locks this process keeps after a turn (file-store.ts `unlock`), each with how to let it go
 * now (it does nothing while a turn or a fork holds it again). A kept lock is let go by a timer,
 * which cannot fire while this process blocks; another process waits for it only `LOCK_WAIT_MS`.
 * Invariant: this process lets them go (`letGoKept`) before it blocks for long: before it waits
 * for another's lock (that bridge may be waiting, blocked too, for one of these: two bridges each
 * wanting the session the other just used), before it loads, forks or scans a log for a
 * listing, or deletes a session's checkpoints (file-store.ts, file-catalog.ts: synchronous, in
 * time with the log's size or the checkpoints' files), and before
 * it closes many logs, a sync each (loaded-sessions.ts: out of descriptors, shutdown).
 */
const kept = new Map<HeldLock, () => void>();

/** `lock` is kept after a turn, until `letGo`, `letGoKept` or `releaseLock`. */
export function keepAfterTurn(lock: HeldLock, letGo: () => void): void {
  kept.set(lock, letGo);
}

/** Lets go of the locks kept after turns, but those a turn or a fork holds again: this process is about to block. */
export function letGoKept(): void {
  for (const letGo of [...kept.values()]) letGo();
}

/**
 * Takes the lock `file` for `sessionId`, or throws `SessionLockedError` when a live process
 * holds it for longer than `LOCK_WAIT_MS`. The wait blocks this process (the lock is taken where
 * the caller cannot wait: opening a session for a prompt, a fork, a delete); it happens only
 * when another process has the session, and lets go first of the locks this process keeps after
 * its turns (`keepAfterTurn`). `wait: false` refuses at once (a best-effort take: a log's trim at
 * close, where a bridge closes logs by the dozen).
 */
export function acquireLock(file: string, sessionId: string, wait = true): HeldLock {
  let owner: ProcessOwner | undefined;
  // Monotonic: the wall clock set back meanwhile would make the wait as much longer, the bridge blocked.
  const deadline = performance.now() + LOCK_WAIT_MS;
  for (let attempt = 0; attempt < 4; attempt++) {
    let lock: HeldLock | undefined;
    try {
      lock = makeLock(file);
    } catch (error) {
      throw cannot(sessionId, file, "create", error);
    }
    if (!lock) {
      const holder = holderOf(file, sessionId);
      if (!holder) continue; // released meanwhile
      owner = holder.owner;
      // A lock naming this process is live only if this process holds that very file; a copy or a forgery is stale.
      const self = owner !== undefined && seenHere(owner) && owner.pid === SELF.pid && owner.start === SELF.start;
      // An mtime in the future (a clock set back, a touched file) does not keep a half-written lock young for good.
      const young = Math.abs(Date.now() - holder.mtimeMs) < UNWRITTEN_GRACE_MS;
      const live = owner ? (self ? holding(file, holder) : alive(owner)) : young;
      if (live) {
        // Another live process: wait for it to let go (it lingers after a turn), up to the deadline.
        if (self || !wait || performance.now() >= deadline) throw new SessionLockedError(sessionId, file, owner);
        letGoKept();
        Atomics.wait(sleeper, 0, 0, LOCK_RETRY_MS);
        attempt--;
        continue;
      }
      try {
        removeStale(file, holder);
      } catch (error) {
        throw cannot(sessionId, file, "take over", error); // stale, but the folder will not let it go (read-only)
      }
      continue;
    }
    held.set(file, lock);
    hookExit();
    return lock;
  }
  throw new SessionLockedError(sessionId, file, owner);
}

/** Removes the lock file, when it is still the one `lock` created (never another process's). */
export function releaseLock(lock: HeldLock): void {
  kept.delete(lock);
  if (held.get(lock.file) === lock) held.delete(lock.file);
  removeIfStill(lock);
}
