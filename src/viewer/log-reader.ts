/**
 * What the session viewer reads of the logs: the workspace's sessions (as `session/list` lists
 * them) and a session's lines, page by page from a byte offset.
 *
 * Invariants, and why:
 * - Read-only. A viewer is pointed at logs another process is writing; it never writes a log or
 *   a meta file (the catalog's listing rewrites a stale meta, this one does not), and never
 *   takes a session's lock (lock.ts): reads need none, because only whole lines are read.
 * - A log is untrusted model output, and may be damaged: a line that does not parse, or parses
 *   to something that is no event, becomes a `viewer/unparsable` entry, never an error; the
 *   reader never throws on what a line holds.
 * - Bounded memory whatever the log: a page holds at most `PAGE_EVENTS` lines and about
 *   `PAGE_BYTES` bytes, and a line longer than `LINE_CAP` bytes is never held whole (only its
 *   first bytes, to name its type and seq): it becomes a `viewer/oversized` entry.
 * - Session ids become paths only through `logPath` (log-format.ts), which checks them against
 *   the protocol's pattern; logs are opened with O_NOFOLLOW and must be regular files.
 *
 * The cursor is a byte offset (the end of the last line sent), not a seq: a damaged line has no
 * seq, and an offset lets the page follow a log past one without seeing it twice. After the last
 * line of a log a bridge has open it is the byte after that line's JSON, where its next line
 * will start (the spaces between are written over: log-tail.ts).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isObject } from "../json-value.js";
import type { SessionListEntry } from "../protocol/sessions-types.js";
import { isSessionId, logPath, openLogForReading, parseHeader, refuseSymlinkedFolder, type SessionHeader } from "../agent/store/log-format.js";
import { byteAt, eachLine, lineHead, MAX_NESTING, nestedTooDeep } from "../agent/store/log-lines.js";
import { readMeta, scanLog, sortEntries } from "../agent/store/summary.js";

/** Most lines in one page. */
export const PAGE_EVENTS = 200;
/** About the most bytes of lines in one page (one line may pass it). */
export const PAGE_BYTES = 2 * 1024 * 1024;
/** Longest line sent whole; a longer one is named, not held. */
export const LINE_CAP = 1024 * 1024;
/** A page from the tail starts at most this far before the end (the first line start after). */
export const TAIL_BYTES = 4 * 1024 * 1024;
/** How much of an unparsable line is shown. */
const UNPARSABLE_SHOWN = 2000;
const HEAD_BYTES = 256;

/** One entry of a page: an event as the log holds it, or the viewer's note on a line it could not use. */
export type ViewerEvent = Record<string, unknown> & { type: string };

export interface SessionPage {
  header?: SessionHeader;
  events: ViewerEvent[];
  /** The cursor for the next page: the offset after the last line in this one. */
  next: number;
  /** More whole lines follow `next` now (ask again at once). */
  more: boolean;
  /** For a page from the tail: the bytes of events before it that were not read. */
  skipped?: number;
}

/**
 * Entries scanned from logs, by file, with the size and mtime they were scanned at. The page
 * polls the list every few seconds, and a running session's meta is stale until its turn ends:
 * without this, its whole log would be scanned again at every poll. One entry per log file
 * of the last listing (a log deleted since is forgotten: a viewer left running does not grow
 * with every session ever made); `entry` undefined for a file that holds no session yet (no
 * whole header line), so a large such file is not read again at every poll while unchanged.
 */
export type ListCache = Map<string, { size: number; mtimeMs: number; entry: SessionListEntry | undefined; spacesAt?: number }>;

/** The workspace folder's sessions, newest first, and what could not be listed. Never writes. */
export function listSessions(directory: string, cache: ListCache = new Map()): { sessions: SessionListEntry[]; problems: string[] } {
  let names: fs.Dirent[];
  try {
    refuseSymlinkedFolder(directory);
    names = fs.readdirSync(directory, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { sessions: [], problems: [] };
    return { sessions: [], problems: [(error as Error).message] };
  }
  const sessions: SessionListEntry[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const dirent of names) {
    if (!dirent.isFile() || !dirent.name.endsWith(".jsonl")) continue; // a symlink, folder or FIFO is no session
    const id = dirent.name.slice(0, -".jsonl".length);
    if (!isSessionId(id)) continue;
    const file = path.join(directory, dirent.name);
    seen.add(file);
    try {
      const { size, mtimeMs } = fs.lstatSync(file);
      const known = cache.get(file);
      // A log a bridge has open is written over its spaces (log-tail.ts): its size stays, and its
      // mtime may too (coarse clocks); the byte where its next line starts tells.
      const same = known && known.size === size && known.mtimeMs === mtimeMs && (known.spacesAt === undefined || spaceAt(file, known.spacesAt));
      const found = same ? known : readMetaEntry(file, id, size) ?? scanned(file, id);
      cache.set(file, { size, mtimeMs, ...found });
      if (found.entry) sessions.push(found.entry);
    } catch (error) {
      // The store's scan gives up on some damaged lines; the session is still worth showing.
      const header = headerOnly(directory, id);
      if (header) sessions.push({ sessionId: id, title: "", createdAt: header.createdAt, updatedAt: header.createdAt, turns: 0 });
      problems.push(`${dirent.name}: ${header ? "listed from its header only: " : ""}${(error as Error).message}`);
    }
  }
  for (const file of cache.keys()) if (!seen.has(file)) cache.delete(file);
  return { sessions: sortEntries(sessions), problems };
}

function readMetaEntry(file: string, id: string, size: number): { entry: SessionListEntry } | undefined {
  const entry = readMeta(file, id, size);
  return entry && { entry };
}

/** A log's entry, scanned from the log itself (the stale meta is left as it is), and where its spaces start if it has any (a read by its head only: -1, never the same). */
function scanned(file: string, id: string): { entry: SessionListEntry | undefined; spacesAt?: number } {
  const fd = openLogForReading(file);
  if (fd === undefined) return { entry: undefined };
  try {
    const found = scanLog(fd);
    if (!found) return { entry: undefined };
    const entry = { ...found.entry, sessionId: id };
    return found.padded ? { entry, spacesAt: found.spacesAt ?? -1 } : { entry };
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether the byte at `at` of `file` is still a space (no line written there since). */
function spaceAt(file: string, at: number): boolean {
  const fd = at < 0 ? undefined : openLogForReading(file);
  if (fd === undefined) return false;
  try {
    return byteAt(fd, at) === 0x20;
  } finally {
    fs.closeSync(fd);
  }
}

/** The header of a log whose summary could not be scanned (from its first page: bounded). */
function headerOnly(directory: string, id: string): SessionHeader | undefined {
  try {
    const page = readPage(directory, id, 0);
    return typeof page === "object" && typeof page.header?.createdAt === "number" ? page.header : undefined;
  } catch {
    return undefined;
  }
}

/** Why a page cannot be read: no such session, or a cursor that is no line start of this log (the log was cut or replaced: start again). */
export type PageRefusal = "unknown-session" | "bad-cursor";

/**
 * The page of `sessionId`'s log from byte `from` (0: from the top, the header included), or,
 * for "tail", its header and the lines of about its last `TAIL_BYTES` (a log of a million
 * events opens at its end; `skipped` says how much was left out). `sessionId` must be a session
 * id (checked again by `logPath`).
 */
export function readPage(directory: string, sessionId: string, from: number | "tail"): SessionPage | PageRefusal {
  const file = logPath(directory, sessionId);
  try {
    refuseSymlinkedFolder(directory);
  } catch {
    return "unknown-session";
  }
  const fd = openLogForReading(file);
  if (fd === undefined) return "unknown-session";
  try {
    const size = fs.fstatSync(fd).size;
    let header: SessionHeader | undefined;
    let skipped: number | undefined;
    if (from === "tail") {
      from = size > TAIL_BYTES ? lineStartAfter(fd, size - TAIL_BYTES, size) : 0;
      if (from > 0) {
        scanLines(fd, 0, (line) => ((header = headerOf(line.body)), false));
        skipped = from;
      }
    }
    if (from > size) return "bad-cursor";
    const page: SessionPage = { events: [], next: from, more: false, ...(header ? { header } : {}), ...(skipped ? { skipped } : {}) };
    if (from > 0 && !startsLine(fd, from)) return spacesToEnd(fd, from - 1, size) ? page : "bad-cursor";
    let bytes = 0;
    scanLines(fd, from, (line) => {
      if (page.events.length >= PAGE_EVENTS || (page.events.length > 0 && bytes + line.bytes > PAGE_BYTES)) {
        page.more = true;
        return false;
      }
      // The last line of a log a bridge has open ends in spaces (log-tail.ts): the next lines are
      // written over them, from the byte after its JSON, so the cursor stops there; until that
      // line is whole (a line of pieces is written in several writes) it is not shown.
      const open = line.body !== undefined && line.end === size && line.end - line.start - 1 > line.bytes;
      const event = line.start === 0 ? undefined : eventOf(line);
      if (open && event?.type === "viewer/unparsable") return false;
      if (line.start === 0) {
        page.header = headerOf(line.body);
        if (!page.header) page.events.push(unparsable(line.head, line.bytes, "the first line is no session header"));
      } else page.events.push(event!);
      bytes += line.body ? line.bytes : HEAD_BYTES;
      page.next = open ? line.start + line.bytes + 1 : line.end;
      return true;
    });
    return page;
  } finally {
    fs.closeSync(fd);
  }
}

/** The first line start after byte `at` (past the "\n" that ends the line holding it); 0 when no whole line ends before `size`: read from the top. */
function lineStartAfter(fd: number, at: number, size: number): number {
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (let position = at; position < size; ) {
    const read = fs.readSync(fd, chunk, 0, chunk.length, position);
    if (read === 0) break;
    const newline = chunk.subarray(0, read).indexOf(10);
    if (newline !== -1) return position + newline + 1 < size ? position + newline + 1 : 0;
    position += read;
  }
  return 0;
}

/** Whether bytes [`at`, `size`) are spaces and the final "\n": the spaces after an open log's last line, where its next line will start. */
function spacesToEnd(fd: number, at: number, size: number): boolean {
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (let position = at; position < size; ) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, size - position), position);
    if (read === 0) return false;
    for (let i = 0; i < read; i++) if (chunk[i] !== 0x20 && !(chunk[i] === 10 && position + i === size - 1)) return false;
    position += read;
  }
  return true;
}

function startsLine(fd: number, at: number): boolean {
  return byteAt(fd, at - 1) === 10;
}

function headerOf(body: Buffer | undefined): SessionHeader | undefined {
  if (!body || nestedTooDeep(body)) return undefined;
  try {
    return parseHeader(body);
  } catch {
    return undefined;
  }
}

interface Line {
  start: number;
  end: number;
  bytes: number;
  /** The first bytes of the line. */
  head: Buffer;
  /** The whole line, when it is at most `LINE_CAP` bytes. */
  body?: Buffer;
}

function eventOf(line: Line): ViewerEvent {
  if (!line.body) {
    const { type, seq, time } = lineHead(line.head);
    return { type: "viewer/oversized", data: { type: type ?? null, seq: seq ?? null, time: time ?? null, bytes: line.bytes } };
  }
  if (nestedTooDeep(line.body)) return unparsable(line.body, line.bytes, `nested deeper than ${MAX_NESTING} levels`);
  let value: unknown;
  try {
    value = JSON.parse(line.body.toString("utf8"));
  } catch {
    return unparsable(line.body, line.bytes, "not JSON");
  }
  if (!isObject(value) || typeof value.type !== "string") {
    return unparsable(line.body, line.bytes, "not an event object");
  }
  return value as ViewerEvent;
}

function unparsable(bytes: Buffer, length: number, why: string): ViewerEvent {
  return { type: "viewer/unparsable", data: { why, bytes: length, text: bytes.toString("utf8", 0, Math.min(bytes.length, UNPARSABLE_SHOWN)) } };
}

/**
 * Visits each whole line (ended by "\n") from `from` on, until `visit` returns false: the store's
 * line reader (log-lines.ts `eachLine`), capped at `LINE_CAP`, so a longer line is visited with
 * its head only: its bytes are counted, not kept.
 */
function scanLines(fd: number, from: number, visit: (line: Line) => boolean): void {
  // A whole line's bytes are those visited: the spaces after a log's last line (log-tail.ts) are no part of its event.
  eachLine(fd, from, (line, start, end, cut) => visit({ start, end, bytes: cut ? end - start - 1 : line.length, head: line.subarray(0, HEAD_BYTES), body: cut ? undefined : line }), LINE_CAP);
}
