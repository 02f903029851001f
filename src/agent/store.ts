/**
 * The durable session store: one JSONL file per session, a header line and then every
 * non-live event, appended (synchronously, in order) before the event is announced.
 *
 * Files live under the session root, grouped by workspace, so that a user's repository is not
 * littered: `<root>/<workspace-name>-<hash>/<sessionId>.jsonl`. The log is fsynced at turn end
 * and at shutdown; a torn last line (the process killed mid-write) is dropped on load and cut
 * from the file so later appends start on a clean line.
 *
 * Logs hold tool output, which may hold secrets: the session root and each workspace folder are
 * 0700 and every log 0600, whatever the umask, and existing ones are tightened when opened.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { jsonLine } from "../json-line.js";
import type { SessionEvent, SessionListEntry, SessionReadResult } from "../protocol/index.js";
import { eachLine } from "./log-lines.js";
import { FileCatalog, logPath, type ForkRefusal, type SessionCatalog } from "./session-catalog.js";
import { SummaryTracker, writeMeta } from "./session-summary.js";
import { firstUserMessage, replayOffset } from "./store-resume.js";

/** The first line of every session log. */
export interface SessionHeader {
  type: "session-header";
  version: 1;
  sessionId: string;
  workspace: string;
  createdAt: number;
  provider: string;
  model: string;
  /** Set for subagent sessions: the session whose `task` call created this one. */
  parentSessionId?: string;
  /** Set for forks (`session/fork`): the session and the turn the history was copied from. */
  forkedFrom?: { sessionId: string; turn: number };
}

export { defaultSessionRoot } from "./session-root.js";

/** The folder of one workspace's sessions: readable name plus a hash of the absolute path. */
export function workspaceFolderName(workspace: string): string {
  const name = path.basename(workspace).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 48) || "root";
  const hash = createHash("sha256").update(workspace).digest("hex").slice(0, 12);
  return `${name}-${hash}`;
}

/** Thrown when a log exists but cannot be read back (a corrupt line before the last one). */
export class SessionLogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionLogError";
  }
}

/** One session's open log. */
export interface SessionLog {
  readonly header: SessionHeader;
  /** The durable events found when the log was opened (empty for a new session), until `releaseLoaded`. */
  readonly loadedEvents: SessionEvent[];
  /** The session has absorbed `loadedEvents`: the log stops holding them (their wrappers are most of a resumed session's memory). */
  releaseLoaded(): void;
  append(event: SessionEvent): void;
  /** fsync: what was appended survives a power loss. */
  sync(): void;
  close(): void;
  /** What `session/list` says of this session now. */
  entry(): SessionListEntry;
}

/** Mode of the session root and its workspace folders: the owner only. */
export const SESSION_DIR_MODE = 0o700;
/** Mode of a session log: the owner only. */
export const SESSION_FILE_MODE = 0o600;

/**
 * The workspace folder is made by the bridge; a symlink in its place was planted. Following it
 * would chmod, write and list wherever it points, so it is refused (the root itself may be a
 * symlink: it is the user's choice).
 */
export function refuseSymlinkedFolder(dir: string): void {
  if (fs.lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink()) {
    throw new SessionLogError(`session folder ${dir} is a symlink; refusing to follow it (move it away to start afresh)`);
  }
}

/** Creates `dir` (and missing parents) and makes it `SESSION_DIR_MODE`, whatever the umask or its mode before. */
function privateFolder(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: SESSION_DIR_MODE });
  fs.chmodSync(dir, SESSION_DIR_MODE);
}

export class SessionStore implements SessionCatalog {
  readonly directory: string;
  private readonly root: string;
  private foldersReady = false;

  /** The logs this store has open, by session id: their entries are live, and they are busy for `delete`. */
  readonly openLogs = new Map<string, SessionLog>();

  constructor(root: string, readonly workspace: string) {
    this.root = root;
    this.directory = path.join(root, workspaceFolderName(workspace));
    this.catalog = new FileCatalog(this.directory, workspace, this.openLogs);
  }

  /** The root and this workspace's folder, private (checked once per store). */
  private ensureFolders(): void {
    if (this.foldersReady) return;
    privateFolder(this.root);
    refuseSymlinkedFolder(this.directory);
    privateFolder(this.directory);
    this.foldersReady = true;
  }

  /** The log file of a session id (refuses anything that is not one: ids become file names). */
  pathOf(sessionId: string): string {
    return logPath(this.directory, sessionId);
  }

  // The sessions API (session-catalog.ts).
  readonly durable = true;
  private readonly catalog: FileCatalog;

  list(): { sessions: SessionListEntry[]; problems: string[] } {
    return this.catalog.list();
  }

  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined {
    return this.catalog.read(sessionId, afterSeq, limit);
  }

  fork(sessionId: string, newSessionId: string, turn: number | undefined): ForkRefusal | undefined {
    this.ensureFolders();
    return this.catalog.fork(sessionId, newSessionId, turn);
  }

  delete(sessionId: string): boolean {
    if (this.openLogs.has(sessionId)) throw new Error(`session ${sessionId} is open: unload it before deleting it`);
    return this.catalog.delete(sessionId);
  }

  openEntry(sessionId: string): SessionListEntry | undefined {
    return this.openLogs.get(sessionId)?.entry();
  }

  /** Whether a session has a log in this workspace (nothing is created). */
  exists(sessionId: string): boolean {
    return fs.existsSync(this.pathOf(sessionId));
  }

  /** Opens a session's log, loading it when it exists and creating it with `header` when not. */
  open(sessionId: string, header: Omit<SessionHeader, "type" | "version" | "sessionId" | "workspace" | "createdAt">): SessionLog {
    const file = this.pathOf(sessionId);
    this.ensureFolders();
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    // Only a regular file is a log: never through a symlink (it could point anywhere, or
    // nowhere yet, and be created there), never a FIFO (opening it would block the bridge).
    if (stat && !stat.isFile()) throw new SessionLogError(`session log ${file} is not a regular file (a symlink, folder or FIFO); move it away to start the session afresh`);
    const existing = stat ? openExisting(file, this.forget) : undefined;
    const log = existing ?? this.create(file, { type: "session-header", version: 1, sessionId, workspace: this.workspace, createdAt: Date.now(), ...header });
    this.openLogs.set(sessionId, log);
    return log;
  }

  /** Writes a new log holding only `header`, and its meta. */
  private create(file: string, header: SessionHeader): SessionLog {
    const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW } = fs.constants;
    const fd = fs.openSync(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, SESSION_FILE_MODE);
    fs.fchmodSync(fd, SESSION_FILE_MODE);
    writeAll(fd, `${JSON.stringify(header)}\n`);
    const log = new FileSessionLog(fd, file, header, [], this.forget);
    log.writeMeta();
    return log;
  }

  private readonly forget = (log: SessionLog): void => {
    if (this.openLogs.get(log.header.sessionId) === log) this.openLogs.delete(log.header.sessionId);
  };
}

function openExisting(file: string, onClose: (log: SessionLog) => void): SessionLog | undefined {
  // Read by lines from the file, not as one string: no copy of the whole log in memory beside
  // its events, and no limit from V8's longest string (a log past ~512 MiB could not load).
  // After a compaction only the header and the lines from the last `context/compacted`'s kept
  // history on are read (store-resume.ts): the bytes between are never loaded.
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  let header: SessionHeader | undefined;
  const events: SessionEvent[] = [];
  let size: number;
  let lines = 0;
  /** Where an unparsable whole line starts: only the last whole line may be one (a torn write). */
  let unparsable: { start: number; line: number } | undefined;
  let whole: number;
  /** The first user message, when the replay skipped it (the session's title comes from it). */
  let titleSource: SessionEvent | undefined;
  /** The replay skipped the history before the last compaction (line numbers are then unknown). */
  let skipped = false;
  const visit = (bytes: Buffer, start: number): boolean => {
    lines += 1;
    if (unparsable) {
      // Anything but the last whole line is corruption we must not paper over.
      const where = skipped ? `byte ${unparsable.start}` : `line ${unparsable.line}`;
      throw new SessionLogError(`session log ${file} is corrupt at ${where}; move it away to start the session afresh`);
    }
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString("utf8"));
    } catch {
      // A whole but unparsable last line is a torn write too (its bytes reached the disk out of order).
      unparsable = { start, line: lines };
      return true;
    }
    if (header) events.push(value as SessionEvent);
    else header = value as SessionHeader;
    return true;
  };
  try {
    size = fs.fstatSync(fd).size;
    // The header line first, then the replay from where the last compaction lets it start.
    let headerEnd = 0;
    whole = eachLine(fd, 0, (bytes, start, end) => {
      headerEnd = end;
      visit(bytes, start);
      return false;
    });
    if (header && !unparsable) {
      const from = replayOffset(fd, size, headerEnd);
      if (from > headerEnd) {
        titleSource = firstUserMessage(fd, headerEnd, from);
        skipped = true;
      }
      whole = eachLine(fd, from, visit);
    }
  } finally {
    fs.closeSync(fd);
  }
  // Only lines followed by "\n" are whole; what follows the last one is a torn write.
  const goodBytes = unparsable ? unparsable.start : whole;
  if (!header) return undefined; // killed while writing the header: start afresh
  if (header.type !== "session-header") {
    throw new SessionLogError(`session log ${file} does not start with a session header; move it away to start the session afresh`);
  }
  if (goodBytes < size) fs.truncateSync(file, goodBytes);
  const appendFd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_NOFOLLOW, SESSION_FILE_MODE);
  fs.fchmodSync(appendFd, SESSION_FILE_MODE);
  return new FileSessionLog(appendFd, file, header, events, onClose, titleSource);
}

/** `fs.writeSync` may write only part of its data (a full disk, a file size limit): loop until all is written. */
function writeAll(fd: number, data: string | Buffer): number {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
  return bytes.length;
}

class FileSessionLog implements SessionLog {
  private closed = false;
  /** Bytes of whole lines in the file: where a failed append is cut back to. */
  private size: number;
  private readonly summary: SummaryTracker;
  /** The log's size when its meta was last written. */
  private metaSize = -1;

  constructor(
    private readonly fd: number,
    private readonly file: string,
    readonly header: SessionHeader,
    public loadedEvents: SessionEvent[],
    private readonly onClose: (log: SessionLog) => void,
    titleSource?: SessionEvent,
  ) {
    this.size = fs.fstatSync(fd).size;
    this.summary = SummaryTracker.of(header, titleSource ? [titleSource, ...loadedEvents] : loadedEvents);
  }

  entry(): SessionListEntry {
    return this.summary.entry();
  }

  releaseLoaded(): void {
    this.loadedEvents = [];
  }

  /** Rewrites the meta file when the log grew since it was last written. */
  writeMeta(): void {
    if (this.metaSize === this.size) return;
    writeMeta(this.file, this.size, this.summary.entry());
    this.metaSize = this.size;
  }

  append(event: SessionEvent): void {
    let written = 0;
    try {
      const line = jsonLine(event);
      // A long line is written piece by piece as it is encoded, never whole in memory.
      if (typeof line === "string") written = writeAll(this.fd, line);
      else for (const piece of line) written += writeAll(this.fd, piece);
    } catch (error) {
      // Cut the torn line off, so a later append does not glue onto it and corrupt the log.
      try {
        fs.ftruncateSync(this.fd, this.size);
      } catch {
        // the torn line stays; it is dropped on load if nothing follows it
      }
      throw error;
    }
    this.size += written;
    this.summary.absorb(event);
  }

  sync(): void {
    if (this.closed) return;
    fs.fsyncSync(this.fd);
    this.writeMeta();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
    try {
      this.writeMeta();
    } finally {
      fs.closeSync(this.fd);
    }
  }
}
