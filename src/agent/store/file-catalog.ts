/**
 * The sessions API over the logs of one workspace folder: list, read, fork, delete
 * (shared/PROTOCOL.md, "Long sessions"). `SessionStore` (store.ts) and `MemorySessionStore`
 * (memory-store.ts, `--no-session-log`) both implement `SessionCatalog`.
 *
 * Safety: a session id is a file name here, so every id is checked against the protocol's
 * pattern again before it becomes a path (no "/", NUL, "." or ".."), and logs are opened with
 * O_NOFOLLOW and O_NONBLOCK and must be regular files: a symlink, a folder or a FIFO planted
 * under a session's name is no session (it is not listed, read, forked or deleted), and
 * nothing here can block on one or read through it.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { READ_PAGE_BYTES, type SessionListEntry, type SessionReadResult } from "../../protocol/sessions-types.js";
import type { SessionEvent } from "../../protocol/types.js";
import { SESSION_ID_PATTERN } from "../../protocol/schemas.js";
import { copyRange, eachLine, lineHead, seekAfterSeq } from "./log-lines.js";
import { metaPathOf, readMeta, scanLog, SummaryTracker, writeMeta } from "./summary.js";
import { refuseSymlinkedFolder, SESSION_FILE_MODE, SessionLogError, type SessionHeader, type SessionLog } from "./file-store.js";

/** Why a fork was refused. */
export type ForkRefusal = { kind: "unknown-session" } | { kind: "session-exists" } | { kind: "unknown-turn"; turns: number };

/** What a session store offers the sessions API. */
export interface SessionCatalog {
  /** Whether sessions outlive the process (a file store) or not (`--no-session-log`). */
  readonly durable: boolean;
  /** This workspace's sessions, newest `updatedAt` first; `problems` names logs that could not be listed. */
  list(): { sessions: SessionListEntry[]; problems: string[] };
  /** A page of durable events; `undefined` for an unknown session. */
  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined;
  /** Copies the history up to the end of `turn` (default: all) into `newSessionId`. */
  fork(sessionId: string, newSessionId: string, turn: number | undefined): ForkRefusal | undefined;
  /** Removes a session that no one has open (the runtime unloads it first); `false` when it did not exist. */
  delete(sessionId: string): boolean;
  /** The live entry of a session open in this process, if it is. */
  openEntry(sessionId: string): SessionListEntry | undefined;
}

/** Newest first: `updatedAt`, then `createdAt`, then id (for a stable order). */
export function sortEntries(entries: SessionListEntry[]): SessionListEntry[] {
  return entries.sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
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

/** Opens a log for reading: a regular file only, never through a symlink, never blocking (a FIFO). `undefined`: no such log. */
function openLog(file: string): number | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR" || code === "ENXIO") return undefined;
    throw error;
  }
  if (fs.fstatSync(fd).isFile()) return fd;
  fs.closeSync(fd);
  return undefined;
}

function withLog<T>(file: string, use: (fd: number) => T): T | undefined {
  const fd = openLog(file);
  if (fd === undefined) return undefined;
  try {
    return use(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The header of an open log and the offset after it; `undefined` when not even the header line is whole. */
function headerOf(fd: number, file: string): { header: SessionHeader; end: number } | undefined {
  let found: { header: SessionHeader; end: number } | undefined;
  eachLine(fd, 0, (line, _start, end) => {
    let header: SessionHeader;
    try {
      header = JSON.parse(line.toString("utf8")) as SessionHeader;
    } catch {
      throw new SessionLogError(`session log ${file} has a corrupt header`);
    }
    if (header?.type !== "session-header") throw new SessionLogError(`session log ${file} does not start with a session header`);
    found = { header, end };
    return false;
  });
  return found;
}

/** The file store's sessions API (store.ts delegates here). `openLogs`: the logs this process holds open. */
export class FileCatalog {
  constructor(
    private readonly directory: string,
    private readonly workspace: string,
    private readonly openLogs: ReadonlyMap<string, SessionLog>,
  ) {}

  list(): { sessions: SessionListEntry[]; problems: string[] } {
    refuseSymlinkedFolder(this.directory);
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(this.directory, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { sessions: [], problems: [] };
      throw error;
    }
    const sessions: SessionListEntry[] = [];
    const problems: string[] = [];
    for (const dirent of names) {
      if (!dirent.name.endsWith(".jsonl")) continue;
      const id = dirent.name.slice(0, -".jsonl".length);
      if (!isSessionId(id)) continue;
      const open = this.openLogs.get(id);
      // A loaded session's live entry, unless another process wrote its file since: then the file tells.
      if (open?.current()) {
        sessions.push(open.entry());
        continue;
      }
      if (!dirent.isFile()) continue; // a symlink, folder or FIFO under a session's name is no session
      const file = path.join(this.directory, dirent.name);
      try {
        const entry = this.entryOf(file, id);
        if (entry) sessions.push(entry);
      } catch (error) {
        problems.push(`${file}: ${(error as Error).message}`);
      }
    }
    return { sessions: sortEntries(sessions), problems };
  }

  /** A closed log's entry: from its meta while that matches the log's size, else scanned from the log (and the meta rewritten). */
  private entryOf(file: string, id: string): SessionListEntry | undefined {
    const size = fs.lstatSync(file).size;
    const cached = readMeta(file, id, size);
    if (cached) return cached;
    return withLog(file, (fd) => {
      const scanned = scanLog(fd);
      if (!scanned) return undefined; // killed while writing its header: no session yet
      const entry = { ...scanned.entry, sessionId: id };
      writeMeta(file, fs.fstatSync(fd).size, entry);
      return entry;
    });
  }

  read(sessionId: string, afterSeq: number | undefined, limit: number): SessionReadResult | undefined {
    const file = logPath(this.directory, sessionId);
    refuseSymlinkedFolder(this.directory);
    return withLog(file, (fd): SessionReadResult | undefined => {
      const head = headerOf(fd, file);
      if (!head) return undefined;
      const size = fs.fstatSync(fd).size;
      const from = afterSeq === undefined ? head.end : seekAfterSeq(fd, head.end, size, afterSeq);
      const events: SessionEvent[] = [];
      let bytes = 0;
      let more = false;
      eachLine(fd, from, (line, start, end) => {
        const seq = lineHead(line).seq;
        if (seq !== undefined && afterSeq !== undefined && seq <= afterSeq) return true;
        if (events.length >= limit || (events.length > 0 && bytes + line.length > READ_PAGE_BYTES)) {
          more = true;
          return false;
        }
        let event: SessionEvent;
        try {
          event = JSON.parse(line.toString("utf8")) as SessionEvent;
        } catch {
          if (end === size) return true; // a whole but unparsable last line is a torn write (as on load)
          throw new SessionLogError(`session log ${file} is corrupt at byte ${start}`);
        }
        if (afterSeq !== undefined && event.seq <= afterSeq) return true;
        events.push(event);
        bytes += line.length;
        return true;
      });
      const last = events.at(-1);
      return more && last ? { events, nextSeq: last.seq } : { events };
    });
  }

  fork(sessionId: string, newSessionId: string, turn: number | undefined): ForkRefusal | undefined {
    const source = logPath(this.directory, sessionId);
    const target = logPath(this.directory, newSessionId);
    refuseSymlinkedFolder(this.directory);
    const outcome = withLog(source, (fd): ForkRefusal | "forked" => {
      const head = headerOf(fd, source);
      if (!head) return { kind: "unknown-session" };
      if (this.openLogs.has(newSessionId) || fs.lstatSync(target, { throwIfNoEntry: false })) return { kind: "session-exists" };
      // The cut: before the first user/message after turn `turn` started (turn 0: before the first one).
      let turns = 0;
      let cut: number | undefined;
      const copied: Array<Pick<SessionEvent, "type" | "time" | "data">> = [];
      let titled = false;
      const end = eachLine(fd, head.end, (line, start) => {
        const { type, time } = lineHead(line);
        if (type === "user/message" && turn !== undefined && turns >= turn) {
          cut = start;
          return false;
        }
        if (type === "turn/start" || type === undefined || (type === "user/message" && !titled)) {
          try {
            const event = JSON.parse(line.toString("utf8")) as SessionEvent;
            if (event.type === "turn/start") turns = Math.max(turns, event.data.turn);
            if (event.type === "user/message") titled = true;
            copied.push(event);
          } catch {
            // an unparsable line is copied as it is: loading the fork treats it as loading the source does
          }
        } else if (time !== undefined) copied.push({ type: type as SessionEvent["type"], time, data: {} as never });
        return true;
      });
      if (turn !== undefined && turn > turns) return { kind: "unknown-turn", turns };
      const header: SessionHeader = {
        type: "session-header",
        version: 1,
        sessionId: newSessionId,
        workspace: this.workspace,
        createdAt: Date.now(),
        provider: head.header.provider,
        model: head.header.model,
        forkedFrom: { sessionId, turn: turn ?? turns },
      };
      const size = writeFork(fd, target, header, head.end, cut ?? end);
      const summary = new SummaryTracker(header);
      for (const event of copied) summary.absorb(event);
      // A fork is new: it is updated when it is made, whatever the times of the events it copied.
      writeMeta(target, size, { ...summary.entry(), updatedAt: header.createdAt });
      return "forked";
    });
    if (outcome === undefined) return { kind: "unknown-session" };
    return outcome === "forked" ? undefined : outcome;
  }

  delete(sessionId: string): boolean {
    const file = logPath(this.directory, sessionId);
    refuseSymlinkedFolder(this.directory);
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) return false;
    fs.unlinkSync(file);
    // The lock file stays: the caller holds it, and removes it when it lets go (store.ts).
    for (const extra of [metaPathOf(file), `${metaPathOf(file)}.tmp`]) fs.rmSync(extra, { force: true });
    return true;
  }
}

/** Writes a fork's log (header, then bytes [`from`, `to`) of the source), fsynced; removes it again on failure. Returns its size. */
function writeFork(source: number, target: string, header: SessionHeader, from: number, to: number): number {
  const fd = fs.openSync(target, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, SESSION_FILE_MODE);
  try {
    fs.fchmodSync(fd, SESSION_FILE_MODE);
    const line = Buffer.from(`${JSON.stringify(header)}\n`, "utf8");
    for (let off = 0; off < line.length; ) off += fs.writeSync(fd, line, off, line.length - off);
    copyRange(source, fd, from, to);
    fs.fsyncSync(fd);
    return line.length + (to - from);
  } catch (error) {
    fs.rmSync(target, { force: true });
    throw error;
  } finally {
    fs.closeSync(fd);
  }
}
