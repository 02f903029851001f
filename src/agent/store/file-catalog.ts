/**
 * The sessions API over the logs of one workspace folder: list, read, fork, delete
 * (shared/PROTOCOL.md, "Long sessions"); the file half of `SessionCatalog` (interface.ts),
 * which `SessionStore` (file-store.ts) delegates to, taking the sessions' locks for fork and delete.
 *
 * Safety: a session id is a file name here, so every id becomes a path only through `logPath`
 * (log-format.ts: checked against the protocol's pattern again), and logs are opened with
 * `openLogForReading` (O_NOFOLLOW, O_NONBLOCK) and must be regular files: a symlink, a folder
 * or a FIFO planted under a session's name is no session (it is not listed, read, forked or
 * deleted), and nothing here can block on one or read through it.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { READ_PAGE_BYTES, type SessionListEntry, type SessionReadResult } from "../../protocol/sessions-types.js";
import type { SessionEvent } from "../../protocol/types.js";
import { skipTemp, tempSibling } from "../../temp-name.js";
import { isOutOfDescriptors } from "../../tools/out-of-descriptors.js";
import { completeFork, type ForkRefusal, type SessionLog } from "./interface.js";
import {
  forkHeader,
  isSessionId,
  logPath,
  metaPathOf,
  openLogForReading,
  parseHeader,
  refuseSymlinkedFolder,
  removeLeftCheckpoints,
  SESSION_FILE_MODE,
  SessionLogError,
  writeAll,
  type SessionHeader,
} from "./log-format.js";
import { eventShapeProblem } from "./event-shape.js";
import { letGoKept, skipOwnerFile } from "./lock.js";
import { copyRange, eachLine, jsonBeforeSpaces, jsonOfTornTail, lineHead, lookAgain, MAX_NESTING, parsedTooDeep, seekAfterSeq } from "./log-lines.js";
import { keptEvent } from "./resume.js";
import { readMeta, scanLog, sortEntries, SummaryTracker, writeMeta } from "./summary.js";

/** Runs `use` on the log `file` opened for reading; `undefined` when there is no such log. */
function withLog<T>(file: string, use: (fd: number) => T): T | undefined {
  const fd = openLogForReading(file);
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
    let header: SessionHeader | undefined;
    try {
      header = parseHeader(line);
    } catch {
      throw new SessionLogError(`session log ${file} has a corrupt header`);
    }
    if (!header) throw new SessionLogError(`session log ${file} does not start with a session header`);
    found = { header, end };
    return false;
  });
  return found;
}

/** The file store's sessions API (file-store.ts delegates here). `openLogs`: the logs this process holds open. */
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
    const now = Date.now();
    for (const dirent of names) {
      // What a killed bridge left goes: a meta's or a fork's temporary once stale (temp-name.ts), an owner file once its process is gone (lock.ts).
      if (skipTemp(this.directory, dirent.name, now) || skipOwnerFile(this.directory, dirent.name, now)) continue;
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
        // Out of descriptors says nothing of this log: a listing without it would be a wrong answer.
        if (isOutOfDescriptors(error)) throw error;
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
    letGoKept(); // a scan as long as the log (every log another bridge has open): lock.ts `kept`
    return withLog(file, (fd) => {
      const scanned = scanLog(fd);
      if (!scanned) return undefined; // killed while writing its header: no session yet
      const entry = { ...scanned.entry, sessionId: id };
      if (!scanned.padded) writeMeta(file, scanned.size, entry);
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
      let stopped = false;
      const whole = eachLine(fd, from, (line, start, end) => {
        const seq = lineHead(line).seq;
        if (seq !== undefined && afterSeq !== undefined && seq <= afterSeq) return true;
        if (events.length >= limit || (events.length > 0 && bytes + line.length > READ_PAGE_BYTES)) {
          more = true;
          return false;
        }
        stopped = true; // until the line is taken
        let event: SessionEvent;
        /** The event's JSON: the line, or what a torn last line kept of it. */
        let json = line;
        /** The line is the log's torn tail: the page ends with it. */
        let tail = false;
        try {
          event = JSON.parse(line.toString("utf8")) as SessionEvent;
        } catch {
          const seen = lookAgain(fd, line, start, end);
          if (seen === "followed") throw new SessionLogError(`session log ${file} is corrupt at byte ${start}`);
          // Read across another process's write: what follows is that process's to finish.
          if (seen === "gone") return false;
          // A whole but unparsable last line is a torn write (as on load), after the JSON of the
          // last line it tore when it was written over that line's spaces (resume.ts).
          const before = jsonBeforeSpaces(line);
          const kept = before && keptEvent(before);
          if (!kept) return false;
          event = kept;
          json = before;
          tail = true;
        }
        // A line nested past MAX_NESTING parses but could never be sent (log-lines.ts), and JSON
        // that is no event is no torn write: corrupt, as on load (resume.ts), unless read across a write.
        const problem = parsedTooDeep(json, event) ? `nested deeper than ${MAX_NESTING} levels` : eventShapeProblem(event);
        if (problem) {
          if (lookAgain(fd, line, start, end) === "gone") return false;
          throw new SessionLogError(`session log ${file} is corrupt at byte ${start}: ${problem}`);
        }
        stopped = tail;
        if (afterSeq !== undefined && event.seq <= afterSeq) return !tail;
        events.push(event);
        bytes += json.length;
        return !tail;
      });
      // The last line's JSON and spaces without their "\n" (a power loss), kept as loading keeps it.
      const torn = stopped || more ? undefined : jsonOfTornTail(fd, whole, size);
      const kept = torn && keptEvent(torn);
      if (kept && (afterSeq === undefined || kept.seq > afterSeq)) {
        if (events.length >= limit || (events.length > 0 && bytes + torn.length > READ_PAGE_BYTES)) more = true;
        else events.push(kept);
      }
      const last = events.at(-1);
      return more && last ? { events, nextSeq: last.seq } : { events };
    });
  }

  /** `complete`: the fork's checkpoints, made before its log takes its name (see `writeFork`). */
  fork(sessionId: string, newSessionId: string, turn: number | undefined, complete?: () => void): ForkRefusal | undefined {
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
      /** The last line copied: where its JSON ends (spaces may follow: log-tail.ts) and where it ends. */
      let last = { jsonEnd: head.end, end: head.end };
      const visit = (line: Buffer, start: number, lineEnd: number): boolean => {
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
        last = { jsonEnd: start + line.length, end: lineEnd };
        return true;
      };
      let end = eachLine(fd, head.end, visit);
      // The last line's JSON and spaces without their "\n" (a power loss): copied as loading keeps it.
      const logSize = fs.fstatSync(fd).size;
      const torn = cut === undefined ? jsonOfTornTail(fd, end, logSize) : undefined;
      const tornKept = torn !== undefined && keptEvent(torn) !== undefined && visit(torn, end, logSize);
      if (tornKept) end = logSize;
      if (turn !== undefined && turn > turns) return { kind: "unknown-turn", turns };
      const header = forkHeader(head.header, this.workspace, sessionId, newSessionId, turn ?? turns);
      // The fork gets the checkpoints of the turns it copies (agent/checkpoints), not those an old session of its id left.
      removeLeftCheckpoints(target);
      // The source's spaces after its last line are not copied: the fork ends in that line's "\n".
      const padded = cut === undefined && last.end === end && (tornKept || last.jsonEnd + 1 < end);
      // A completion that fails takes away what it made of the fork's checkpoints; the log is never named.
      const completed = () => completeFork(newSessionId, complete, () => removeLeftCheckpoints(target));
      const size = writeFork(fd, target, header, head.end, padded ? last.jsonEnd : (cut ?? end), padded, completed);
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
    // The checkpoints first: a delete cut short (killed, or failing) leaves the log, and is done again whole.
    letGoKept(); // they are a file per change its turns made (lock.ts `kept`)
    removeLeftCheckpoints(file);
    fs.unlinkSync(file);
    // The lock file stays: the caller holds it, and removes it when it lets go (file-store.ts).
    // A meta's temporary left by a killed writer goes with a later listing (summary.ts writeMeta).
    fs.rmSync(metaPathOf(file), { force: true });
    return true;
  }
}

/**
 * Syncs a folder's entries: a rename is in no file's sync (the fork's log was synced before it
 * took its name), so without this a power loss soon after a fork was answered could take the
 * name back, and the fork with it. A file system that cannot sync a folder leaves the fork as
 * it is (it exists; only its durability is the file system's).
 */
function syncFolder(folder: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(folder, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    fs.fsyncSync(fd);
  } catch {
    // EINVAL and the like: see above
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Makes a fork's log (header, bytes [`from`, `to`) of the source, then "\n" if `newline`): written
 * and fsynced under a temporary name of its own (temp-name.ts), then `complete` runs (the fork's
 * checkpoints), then the log is renamed to `target`. So the fork is whole the moment its log has
 * its name, and a bridge killed before that leaves no fork: only a temporary no listing shows
 * (removed by one once stale) and checkpoints without a log, which the next session or fork of
 * that id removes before it makes its own (log-format.ts `removeLeftCheckpoints`). The rename
 * replaces nothing: the caller holds `target`'s lock, which every maker of a log takes, and found
 * no log there under it; the folder is synced after it (`syncFolder`). On a failure the
 * temporary is removed. Returns the log's size.
 */
function writeFork(source: number, target: string, header: SessionHeader, from: number, to: number, newline: boolean, complete: () => void): number {
  const temp = tempSibling(target);
  const fd = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, SESSION_FILE_MODE);
  try {
    let size: number;
    try {
      fs.fchmodSync(fd, SESSION_FILE_MODE);
      const written = writeAll(fd, `${JSON.stringify(header)}\n`);
      copyRange(source, fd, from, to);
      const closing = newline ? writeAll(fd, "\n") : 0;
      fs.fsyncSync(fd);
      size = written + (to - from) + closing;
    } finally {
      fs.closeSync(fd);
    }
    complete();
    fs.renameSync(temp, target);
    syncFolder(path.dirname(target));
    return size;
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
}
