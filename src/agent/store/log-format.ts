/**
 * What a session log is on disk, shared by every part of the store and importing none of them:
 * the header line and how it is parsed, where a session's files are and their modes, how a log
 * is opened for reading, and the error a log that cannot be used raises.
 *
 * Files: `<root>/<workspace-name>-<hash>/<sessionId>.jsonl` (the log), `.meta.json` beside it
 * (summary.ts: a cache of its list entry) and `.lock` (lock.ts: its one writer). A session id
 * becomes a file name, so it is checked against the protocol's pattern again before it becomes
 * a path (no "/", NUL, "." or ".."). Logs hold tool output, which may hold secrets: folders are
 * `SESSION_DIR_MODE` and files `SESSION_FILE_MODE`, whatever the umask.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { SESSION_ID_PATTERN } from "../../protocol/sessions-types.js";

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

/** Thrown when a log exists but cannot be read back (a corrupt line before the last one). */
export class SessionLogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionLogError";
  }
}

/**
 * A log whose events reached seq 2^53−1: the next seq would round back onto one already used
 * (`seq + 1 === seq` past it), so the session cannot go on. Only a hand edit or a damaged disk
 * gets a log there; `where` names the log (or the session, when it has no file).
 */
export function noSeqLeft(where: string, seq: number): SessionLogError {
  return new SessionLogError(
    `${where} has numbered its events up to seq ${seq}, and the next seq would pass 2^53−1 (${Number.MAX_SAFE_INTEGER}), the largest a seq can be: the log was edited or damaged; move it away to start the session afresh`,
  );
}

/** Mode of the session root and its workspace folders: the owner only. */
export const SESSION_DIR_MODE = 0o700;
/** Mode of a session's log and meta file: the owner only. */
export const SESSION_FILE_MODE = 0o600;

/** The folder of one workspace's sessions: readable name plus a hash of the absolute path. */
export function workspaceFolderName(workspace: string): string {
  const name = path.basename(workspace).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 48) || "root";
  const hash = createHash("sha256").update(workspace).digest("hex").slice(0, 12);
  return `${name}-${hash}`;
}

/** Whether `id` may name a session (the protocol's pattern; not "." or ".."). */
export function isSessionId(id: string): boolean {
  return SESSION_ID_PATTERN.test(id) && id !== "." && id !== "..";
}

/** The log file of `sessionId` in `directory`; throws on an id that is no session id (a caller's bug: ids are validated at the wire). */
export function logPath(directory: string, sessionId: string): string {
  if (!isSessionId(sessionId)) throw new Error(`not a session id: ${JSON.stringify(sessionId.slice(0, 200))}`);
  return path.join(directory, `${sessionId}.jsonl`);
}

/** The meta file of a log file (`x.jsonl` → `x.meta.json`). */
export function metaPathOf(logFile: string): string {
  return `${logFile.slice(0, -".jsonl".length)}.meta.json`;
}

/** The checkpoint store of a log file (`x.jsonl` → `x.checkpoints`, a folder: agent/checkpoints/store.ts). */
export function checkpointsPathOf(logFile: string): string {
  return `${logFile.slice(0, -".jsonl".length)}.checkpoints`;
}

/**
 * Removes the checkpoints a session of the same id left beside a log that is gone (removed by
 * hand, or by a process killed in the middle of a delete): a new log under that id must not take
 * them on, or a rewind of its turn 1 would restore the files as they were before the old
 * session's. Never through a symlink in their place (only the link goes). Call under the lock.
 */
export function removeLeftCheckpoints(logFile: string): void {
  fs.rmSync(checkpointsPathOf(logFile), { recursive: true, force: true });
}

/** The lock file of a log file (`x.jsonl` → `x.lock`). */
export function lockPathOf(logFile: string): string {
  return `${logFile.slice(0, -".jsonl".length)}.lock`;
}

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

/**
 * Opens a store file for reading, never through a symlink in its place (`ELOOP`) and never
 * blocking on a FIFO planted there; the caller checks that what it got is a regular file.
 * Throws as `fs.openSync` does.
 */
export function openForReading(file: string): number {
  return fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
}

/** Opens a log for reading: a regular file only (`openForReading`). `undefined`: no such log (missing, or a symlink, folder or FIFO). */
export function openLogForReading(file: string): number | undefined {
  let fd: number;
  try {
    fd = openForReading(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR" || code === "ENXIO") return undefined;
    throw error;
  }
  if (fs.fstatSync(fd).isFile()) return fd;
  fs.closeSync(fd);
  return undefined;
}

/**
 * The header a log's first line holds; `undefined` when that line is JSON but no session
 * header. A line that is not JSON throws `JSON.parse`'s `SyntaxError`: whether that is a torn
 * write or corruption, only the caller knows.
 */
export function parseHeader(line: Buffer): SessionHeader | undefined {
  return headerOf(JSON.parse(line.toString("utf8")));
}

/** The header a parsed first line is, if it is one. */
export function headerOf(value: unknown): SessionHeader | undefined {
  return typeof value === "object" && value !== null && (value as SessionHeader).type === "session-header" ? (value as SessionHeader) : undefined;
}

/** The header of `newSessionId`, a fork of `sessionId` (whose header is `source`) at `turn`, made now. */
export function forkHeader(source: SessionHeader, workspace: string, sessionId: string, newSessionId: string, turn: number): SessionHeader {
  return {
    type: "session-header",
    version: 1,
    sessionId: newSessionId,
    workspace,
    createdAt: Date.now(),
    provider: source.provider,
    model: source.model,
    forkedFrom: { sessionId, turn },
  };
}

/** `fs.writeSync` may write only part of its data (a full disk, a file size limit): loop until all is written. */
export function writeAll(fd: number, data: string | Buffer): number {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
  return bytes.length;
}
