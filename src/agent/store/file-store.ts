/**
 * The durable session store: one JSONL file per session, a header line and then every
 * non-live event, appended (synchronously, in order) before the event is announced.
 *
 * Files live under the session root, grouped by workspace, so that a user's repository is not
 * littered: `<root>/<workspace-name>-<hash>/<sessionId>.jsonl`. The log is synced
 * (`fdatasync`) at turn end and at shutdown; a torn last line (the process killed mid-write) is
 * dropped on load and cut from the file so later appends start on a clean line. While a log is
 * open its last line carries spaces that the next lines are written over (log-tail.ts: a sync
 * then writes no inode); they go when it is closed or loaded again.
 *
 * One writer per session across processes (lock.ts): a process writes a session only
 * while it holds the session's lock file, taken when the session is opened or a turn starts
 * (`SessionLog.lock`) and removed `LOCK_LINGER_MS` after the turn ends (`unlock`: the next turn
 * of a loop finds it held, and takes and checks nothing) or when the log is closed. Another
 * process's prompt meanwhile waits that moment out, and is refused (`SessionLockedError`, -32001
 * `session-locked`) when the lock stays held past `LOCK_WAIT_MS` (a turn runs there); reads
 * (`session/list`, `session/read`) take no lock: they read whole lines only. A loaded session
 * whose file another process wrote or deleted while it was idle is reloaded from the file when
 * its next turn takes the lock. Lines are written at the tail this process knows (log-tail.ts),
 * only under the lock, after `current` has checked that no other process wrote since; a new
 * log is created with `O_EXCL` (never truncating one another process made), and a torn last
 * line is cut only under the lock.
 *
 * Logs hold tool output, which may hold secrets: the session root and each workspace folder are
 * 0700 and every log 0600, whatever the umask, and existing ones are tightened when opened.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { jsonLine, jsonText } from "../../json-line.js";
import { makeFolders } from "../../make-folders.js";
import { isOutOfDescriptors } from "../../tools/out-of-descriptors.js";
import type { SessionEvent, SessionListEntry, SessionReadResult } from "../../protocol/index.js";
import { FileCatalog } from "./file-catalog.js";
import type { ForkRefusal, NewSessionHeader, SessionCatalog, SessionLog } from "./interface.js";
import { acquireLock, letGoKept, releaseLock, type HeldLock } from "./lock.js";
import { LogLock } from "./log-lock.js";
import { LogTail } from "./log-tail.js";
import {
  lockPathOf,
  logPath,
  refuseSymlinkedFolder,
  removeLeftCheckpoints,
  SESSION_DIR_MODE,
  SESSION_FILE_MODE,
  SessionLogError,
  workspaceFolderName,
  writeAll,
  type SessionHeader,
} from "./log-format.js";
import { loadLog } from "./resume.js";
import { SummaryTracker, writeMeta } from "./summary.js";

/** Creates `dir` (and missing parents) and makes it `SESSION_DIR_MODE`, whatever the umask or its mode before. */
function privateFolder(dir: string): void {
  // Not mkdirSync's recursive mode: it says ENOENT where a read-only HOME refuses (make-folders.ts).
  makeFolders(dir, SESSION_DIR_MODE);
  fs.chmodSync(dir, SESSION_DIR_MODE);
}

/** The `session-log` error of a session folder that cannot be made or used, naming the settings that move it. */
function unusableFolder(dir: string, why: string): SessionLogError {
  return new SessionLogError(
    `cannot make the session log folder ${dir} (${why}): start the bridge with a writable session root (--session-root DIR or HARNESS_SESSION_ROOT; the Python SDK's session_root=), or with --no-session-log to keep sessions in memory only`,
  );
}

/**
 * Why `dir` can be neither a folder nor made one (`undefined`: it is a searchable folder, or
 * missing under one). Out of descriptors stays itself.
 */
function folderProblem(dir: string): string | undefined {
  try {
    const stat = fs.statSync(dir, { throwIfNoEntry: false });
    if (stat) {
      if (!stat.isDirectory()) return `${dir} is not a folder`;
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.X_OK);
      return undefined;
    }
    // Missing: its nearest existing ancestor decides (a dangling symlink there cannot be made a folder).
    for (let child = dir, parent = path.dirname(dir); parent !== child; child = parent, parent = path.dirname(parent)) {
      if (!fs.lstatSync(parent, { throwIfNoEntry: false })) continue;
      const target = fs.statSync(parent, { throwIfNoEntry: false });
      if (!target) return `${parent} is a dangling symlink`;
      return target.isDirectory() ? undefined : `${parent} is not a folder`;
    }
    return undefined;
  } catch (error) {
    if (isOutOfDescriptors(error)) throw error;
    return (error as Error).message;
  }
}

/** The file store of one workspace: its sessions' logs under `root`, opened for turns and served to the sessions API. */
export class SessionStore implements SessionCatalog {
  readonly directory: string;
  private readonly root: string;
  private foldersReady = false;

  /** The logs this store has open, by session id: their entries are live, and they are busy for `delete`. */
  readonly openLogs = new Map<string, FileSessionLog>();

  constructor(root: string, readonly workspace: string) {
    this.root = root;
    this.directory = path.join(root, workspaceFolderName(workspace));
    this.catalog = new FileCatalog(this.directory, workspace, this.openLogs);
  }

  /** The root and this workspace's folder, private (checked once per store). */
  private ensureFolders(): void {
    if (this.foldersReady) return;
    this.checkFolder();
    this.makeFolder(this.root);
    refuseSymlinkedFolder(this.directory);
    this.makeFolder(this.directory);
    this.foldersReady = true;
  }

  /**
   * `privateFolder`, its failure a `session-log` error that names the folder and the ways out:
   * the default root lies under `HOME`, which a container or service account may have read-only
   * or missing, and the bare errno alone points at no setting. Out of descriptors stays itself
   * (rpc-errors.ts answers it `out-of-descriptors`, to be retried).
   */
  private makeFolder(dir: string): void {
    try {
      privateFolder(dir);
    } catch (error) {
      if (isOutOfDescriptors(error)) throw error;
      throw unusableFolder(dir, (error as Error).message);
    }
  }

  /**
   * Refuses, at every entry point of the store (reads included), a workspace folder that no
   * session can live in: a path component that is a file, a dangling symlink, a loop or not
   * searchable. A folder not made yet under a usable parent is fine: reads find no sessions.
   * Without this a read answers a bare errno as an internal error, or nothing at all, while the
   * first prompt answers the `session-log` error; all of them answer that error now.
   */
  private checkFolder(): void {
    const problem = folderProblem(this.directory);
    if (problem !== undefined) throw unusableFolder(this.directory, problem);
  }

  /** The lock file beside a session's log (lock.ts). */
  private lockOf(sessionId: string): string {
    return lockPathOf(this.pathOf(sessionId));
  }

  /** Runs `use` under the session's lock, unless this process holds it already (the session is loaded and locked here). */
  private underLock<T>(sessionId: string, use: () => T): T {
    const open = this.openLogs.get(sessionId);
    if (open?.locked) return open.holding(use);
    const lock = acquireLock(this.lockOf(sessionId), sessionId);
    try {
      return use();
    } finally {
      releaseLock(lock);
    }
  }

  /** Lets go of the locks kept after turns (lock.ts `kept`): this process is about to close many logs, a sync each. */
  letGoKept(): void {
    letGoKept();
  }

  /** The log file of a session id (refuses anything that is not one: ids become file names). */
  pathOf(sessionId: string): string {
    return logPath(this.directory, sessionId);
  }

  // The sessions API (file-catalog.ts).
  readonly durable = true;
  private readonly catalog: FileCatalog;

  list(): { sessions: SessionListEntry[]; problems: string[] } {
    this.checkFolder();
    return this.catalog.list();
  }

  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined {
    this.checkFolder();
    return this.catalog.read(sessionId, afterSeq, limit);
  }

  /** Under the source's lock (a session another process writes is busy) and the new one's, `complete` too. */
  fork(sessionId: string, newSessionId: string, turn: number | undefined, complete?: () => void): ForkRefusal | undefined {
    this.ensureFolders();
    if (!this.exists(sessionId)) return { kind: "unknown-session" };
    const fork = () => {
      letGoKept(); // a copy and an fsync, as long as the log (lock.ts `kept`); the source's lock is held here
      return this.catalog.fork(sessionId, newSessionId, turn, complete);
    };
    return this.underLock(sessionId, newSessionId === sessionId ? fork : () => this.underLock(newSessionId, fork));
  }

  /** Under the session's lock: a session another process has open for writing is not deleted under it. */
  delete(sessionId: string): boolean {
    if (this.openLogs.has(sessionId)) throw new Error(`session ${sessionId} is open: unload it before deleting it`);
    this.checkFolder();
    refuseSymlinkedFolder(this.directory);
    if (!this.exists(sessionId)) return false;
    return this.underLock(sessionId, () => this.catalog.delete(sessionId));
  }

  openEntry(sessionId: string): SessionListEntry | undefined {
    const open = this.openLogs.get(sessionId);
    return open?.current() ? open.entry() : undefined;
  }

  /** Whether a session has a log in this workspace (nothing is created); a folder no log can be in is `SessionLogError`. */
  exists(sessionId: string): boolean {
    this.checkFolder();
    return fs.existsSync(this.pathOf(sessionId));
  }

  /**
   * Opens a session's log, loading it when it exists and creating it with `header` when not,
   * under the session's lock, which the log holds on return (`SessionLockedError` when another
   * process holds it).
   */
  open(sessionId: string, header: NewSessionHeader): SessionLog {
    const file = this.pathOf(sessionId);
    this.ensureFolders();
    const lock = acquireLock(this.lockOf(sessionId), sessionId);
    let log: FileSessionLog;
    try {
      const full: SessionHeader = { type: "session-header", version: 1, sessionId, workspace: this.workspace, createdAt: Date.now(), ...header };
      log = this.load(file, lock) ?? this.create(file, full, lock) ?? this.load(file, lock) ?? this.create(file, full, lock, true)!;
    } catch (error) {
      releaseLock(lock);
      throw error;
    }
    this.openLogs.set(sessionId, log);
    return log;
  }

  /** The existing log, loaded (its torn last line cut: we hold the lock); `undefined` when there is none (or only a torn header). */
  private load(file: string, lock: HeldLock): FileSessionLog | undefined {
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    // Only a regular file is a log: never through a symlink (it could point anywhere, or
    // nowhere yet, and be created there), never a FIFO (opening it would block the bridge).
    if (stat && !stat.isFile()) throw new SessionLogError(`session log ${file} is not a regular file (a symlink, folder or FIFO); move it away to start the session afresh`);
    if (stat) letGoKept(); // loading takes as long as the log (lock.ts `kept`)
    const loaded = stat ? loadLog(file) : undefined;
    return loaded && new FileSessionLog(loaded.fd, file, loaded.header, loaded.events, lock, this.forget, loaded.titleSource);
  }

  /**
   * Writes a new log holding only `header`. `O_EXCL`: a log another process made
   * meanwhile (a fork into this id) is never truncated; `undefined` then, and it is loaded.
   * `replace`: a log holding only a torn header (killed while writing it) is written afresh.
   */
  private create(file: string, header: SessionHeader, lock: HeldLock, replace = false): FileSessionLog | undefined {
    // Before the log exists: a removal that fails leaves no log that would be loaded with them.
    removeLeftCheckpoints(file);
    const { O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_NOFOLLOW } = fs.constants;
    let fd: number;
    try {
      // Read as well: `LogTail.untouched` reads the byte where its next line would go.
      fd = fs.openSync(file, O_RDWR | O_CREAT | O_NOFOLLOW | (replace ? O_TRUNC : O_EXCL), SESSION_FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
      throw error;
    }
    fs.fchmodSync(fd, SESSION_FILE_MODE);
    writeAll(fd, `${JSON.stringify(header)}\n`);
    return new FileSessionLog(fd, file, header, [], lock, this.forget);
  }

  private readonly forget = (log: SessionLog): void => {
    if (this.openLogs.get(log.header.sessionId) === log) this.openLogs.delete(log.header.sessionId);
  };
}

/** One session's log file, held open for appends while the session is loaded. */
class FileSessionLog implements SessionLog {
  private closed = false;
  /** Where the next line goes, and the file's size (log-tail.ts). */
  private readonly tail: LogTail;
  private readonly summary: SummaryTracker;
  /** The open file's inode: the path names this log while it names this inode (held open, it cannot be reused). */
  private readonly ino: number;
  /** The session's lock while this process may write the log (log-lock.ts: kept a moment after a turn). */
  private readonly hold: LogLock;

  constructor(
    private readonly fd: number,
    readonly file: string,
    readonly header: SessionHeader,
    public loadedEvents: SessionEvent[],
    held: HeldLock | undefined,
    private readonly onClose: (log: SessionLog) => void,
    titleSource?: SessionEvent,
  ) {
    const stat = fs.fstatSync(fd);
    this.tail = new LogTail(fd, stat.size);
    this.ino = stat.ino;
    this.hold = new LogLock(lockPathOf(file), header.sessionId, held);
    this.summary = SummaryTracker.of(header, titleSource ? [titleSource, ...loadedEvents] : loadedEvents);
  }

  entry(): SessionListEntry {
    return this.summary.entry();
  }

  get locked(): boolean {
    return this.hold.locked;
  }

  lock(): boolean {
    if (this.closed) throw new Error(`session log ${this.file} is closed`);
    if (!this.hold.take()) return true; // kept since this process's last turn: nobody else could write the log
    try {
      return this.current(); // not current: the caller closes this log, which lets the lock go
    } catch (error) {
      this.hold.release(); // no turn starts; held, the next take would skip this check
      throw error;
    }
  }

  /** The turn is over; the lock is let go a moment later (log-lock.ts). */
  unlock(): void {
    this.hold.endTurn();
  }

  /** Runs `use` under the lock this log holds, not let go meanwhile (log-lock.ts). */
  holding<T>(use: () => T): T {
    return this.hold.holding(use);
  }

  /**
   * Whether the path still names this file and nothing but this process wrote it: the size the
   * path shows is the inode's, and a line written over this log's spaces starts where its next
   * would (log-tail.ts `untouched`).
   */
  current(): boolean {
    const now = fs.lstatSync(this.file, { throwIfNoEntry: false });
    return now?.ino === this.ino && now.size === this.tail.size && this.tail.untouched();
  }

  releaseLoaded(): void {
    this.loadedEvents = [];
  }

  append(event: SessionEvent, json?: string): void {
    // One writer per session: a write without the lock could interleave with another process's.
    if (!this.hold.locked) throw new Error(`session ${this.header.sessionId} was written without its lock (a bug)`);
    // A long line is written piece by piece as it is encoded, never whole in memory (jsonLine
    // makes pieces exactly when jsonText finds a long string).
    this.tail.append(json ?? jsonText(event) ?? (jsonLine(event) as Iterable<Buffer>));
    this.summary.absorb(event);
  }

  /** `fdatasync`: the data and what reading it back needs (the size), not the timestamps. */
  sync(): void {
    if (this.closed) return;
    fs.fdatasyncSync(this.fd);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
    try {
      this.trimUnderLock();
    } finally {
      try {
        fs.closeSync(this.fd); // may fail (NFS: a write refused late)
      } finally {
        this.hold.release(); // all the same
      }
    }
  }

  /**
   * The spaces trimmed and the meta written, under the session's lock (taken for this when a
   * turn does not hold it), and only while the file is still this log: another process's lines
   * since make it theirs to trim. Best effort: a lock held elsewhere (not waited for), or a
   * failure, leaves the spaces (a valid log; the next load trims them) and no meta (a listing
   * scans the log).
   *
   * The meta is written here only, after the trim: a meta records a size, and a line written
   * over spaces changes none, so a padded log's meta would look current after it. A turn's sync
   * writes none, because the sync that makes a turn durable would also write the meta's create
   * and rename, and the meta is a cache: a listing in another process meanwhile finds it stale
   * and reads the log (summary.ts). This process lists its open logs from memory.
   */
  private trimUnderLock(): void {
    try {
      // No wait for another process: its turn since makes the file its to trim anyway.
      this.hold.takeNow();
      if (!this.current()) return;
      this.tail.trim();
      writeMeta(this.file, this.tail.size, this.summary.entry());
    } catch {
      // left as it is: see above
    }
  }
}
