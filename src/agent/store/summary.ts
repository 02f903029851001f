/**
 * What `session/list` says about a session (title, times, turns, parent), kept up to date as
 * events are appended, and its small metadata file beside the log.
 *
 * Why a metadata file: listing 10 000 sessions must not read 10 000 logs. `<id>.meta.json`
 * is written when a log this process wrote is closed (evicted, shutdown), and by a listing
 * that had to read the log (not at turn end: see file-store.ts, `writeMeta`). It is a cache,
 * never the truth: it records the log's size, and a
 * listing trusts it only while the log still has exactly that size. A bridge killed
 * mid-turn, another process appending, a torn meta write: the sizes differ (or the meta does
 * not parse), and the entry is rebuilt from the log itself (`scanLog`) and the meta
 * rewritten. So the meta needs no fsync and no lock, and can never make a listing wrong.
 *
 * @module
 */
import * as fs from "node:fs";
import { TITLE_MAX_CHARS, type SessionListEntry } from "../../protocol/sessions-types.js";
import type { SessionEvent, TextBlock } from "../../protocol/types.js";
import { tempSibling } from "../../temp-name.js";
import { metaPathOf, openForReading, parseHeader, SESSION_FILE_MODE, type SessionHeader } from "./log-format.js";
import { byteAt, eachLine, jsonBeforeSpaces, jsonOfTornTail, lineHead } from "./log-lines.js";
import { keptEvent } from "./resume.js";
import { blocksProblem } from "./event-shape.js";
import { isObject } from "../../json-value.js";

/** The longest line a listing's scan holds whole (`scanLog`): four times the bridge's default longest input line (16 MiB). */
export const SCAN_LINE_CAP = 64 * 1024 * 1024;

/** Whitespace is collapsed in at most this much of the first message (the title needs only its start). */
const TITLE_SOURCE_CHARS = 4096;

/** A title from a user message: its text blocks joined, whitespace collapsed, cut to `TITLE_MAX_CHARS` code points ("…" last when cut). */
export function titleOf(content: readonly TextBlock[]): string {
  let text = "";
  for (const block of content) {
    if (block.type !== "text") continue;
    text += `${text ? " " : ""}${block.text.slice(0, TITLE_SOURCE_CHARS)}`;
    if (text.length >= TITLE_SOURCE_CHARS) break;
  }
  const chars = Array.from(text.slice(0, TITLE_SOURCE_CHARS).replace(/\s+/g, " ").trim());
  if (chars.length <= TITLE_MAX_CHARS) return chars.join("");
  return `${chars.slice(0, TITLE_MAX_CHARS - 1).join("").trimEnd()}…`;
}

/** A session's list entry, followed event by event. */
export class SummaryTracker {
  private title: string | undefined;
  private updatedAt: number;
  private turns = 0;

  constructor(private readonly header: SessionHeader) {
    this.updatedAt = createdAtOf(header);
  }

  /**
   * The tracker of a loaded log, without visiting every event (a resume of a million events
   * must not pay for its listing): the first `user/message` from the front, the last
   * `turn/start` or `context/compacted` (turns only grow) from the back, the last event's time.
   */
  static of(header: SessionHeader, events: readonly SessionEvent[]): SummaryTracker {
    const tracker = new SummaryTracker(header);
    const first = events.find((e) => e.type === "user/message");
    if (first) tracker.absorb(first);
    for (let i = events.length - 1; i >= 0; i--) {
      if (events[i]!.type === "turn/start" || events[i]!.type === "context/compacted") {
        tracker.absorb(events[i]!);
        break;
      }
    }
    const last = events.at(-1);
    if (last) tracker.absorb(last); // idempotent for the two above
    return tracker;
  }

  /**
   * Takes what a listing needs from one event. The event comes from a file: any field may have
   * another shape than the protocol's (a hand edit, a damaged write), and such a field is
   * ignored, never trusted: the listing of a session survives every line of its log.
   */
  absorb(event: Pick<SessionEvent, "type" | "time" | "data">): void {
    if (typeof event.time === "number" && event.time > this.updatedAt) this.updatedAt = event.time;
    const data: unknown = event.data;
    if (typeof data !== "object" || data === null) return;
    if (event.type === "user/message" && this.title === undefined) {
      const content = (data as { content?: unknown }).content;
      // Content the replay would refuse (store/event-shape.ts) gives no title either.
      if (blocksProblem(content, "content") === undefined) this.title = titleOf(content as TextBlock[]);
    }
    // A resume after a compaction may hold no `turn/start`: the compaction names the last turn.
    else if (event.type === "turn/start" || event.type === "context/compacted") {
      const turn = (data as { turn?: unknown }).turn;
      if (typeof turn === "number" && Number.isFinite(turn)) this.turns = Math.max(this.turns, turn);
    }
  }

  /** Whether a user message has given the session its title (later ones need not be parsed). */
  get titled(): boolean {
    return this.title !== undefined;
  }

  entry(): SessionListEntry {
    return entryOf(this.header, { title: this.title ?? "", updatedAt: this.updatedAt, turns: this.turns });
  }
}


/** Newest first: `updatedAt`, then `createdAt`, then id (for a stable order). */
export function sortEntries(entries: SessionListEntry[]): SessionListEntry[] {
  return entries.sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0));
}

/** The list entry of a header and what its events said. */
export function entryOf(header: SessionHeader, seen: { title: string; updatedAt: number; turns: number }): SessionListEntry {
  const parent = parentOf(header.parentSessionId !== undefined ? header.parentSessionId : header.forkedFrom?.sessionId, header.parentSessionId !== undefined ? "task" : "fork");
  return { sessionId: header.sessionId, title: seen.title, createdAt: createdAtOf(header), updatedAt: seen.updatedAt, turns: seen.turns, ...parent };
}

/** A header's creation time, 0 when the file holds something else there (see parentOf). */
function createdAtOf(header: SessionHeader): number {
  return typeof header.createdAt === "number" ? header.createdAt : 0;
}

/**
 * An entry's parent fields, only when the parent is a string. A header or meta is a file (a
 * hand edit, a damaged disk): whatever else it holds there must not reach a listing, whose
 * answer must serialize (a value nested thousands deep throws in JSON.stringify, and one bad
 * file would fail the whole `session/list` and the viewer's list with it).
 */
function parentOf(parentSessionId: unknown, origin: unknown): Pick<SessionListEntry, "parentSessionId" | "origin"> {
  return typeof parentSessionId === "string" && (origin === "task" || origin === "fork") ? { parentSessionId, origin } : {};
}

/** A meta file is a few hundred bytes; anything much larger is not one. */
const MAX_META_BYTES = 64 * 1024;

interface MetaFile {
  version: 1;
  /** The log's size when this was written: the meta holds only while the log has this size. */
  logSize: number;
  entry: SessionListEntry;
}

/**
 * Rewrites the meta of `logFile` (write to a temporary, rename over). Best effort: a failure only
 * costs the next listing a scan. Listings of two processes may write one meta at once (they take
 * no lock), so the temporary is this write's own (temp-name.ts), created `O_EXCL | O_NOFOLLOW`:
 * never another writer's file, never through what was planted there. A killed writer's leftover
 * goes with a later listing (file-catalog.ts).
 */
export function writeMeta(logFile: string, logSize: number, entry: SessionListEntry): void {
  const target = metaPathOf(logFile);
  const temporary = tempSibling(target);
  const meta: MetaFile = { version: 1, logSize, entry };
  let fd: number;
  try {
    fd = fs.openSync(temporary, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, SESSION_FILE_MODE);
  } catch {
    return; // not written: the listing scans the log
  }
  try {
    try {
      fs.writeSync(fd, `${JSON.stringify(meta)}\n`);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temporary, target);
  } catch {
    try {
      fs.rmSync(temporary, { force: true });
    } catch {
      // nothing more to do: the listing scans the log
    }
  }
}

/** The entry the meta of `logFile` holds, if the log still has the size it recorded. */
export function readMeta(logFile: string, sessionId: string, logSize: number): SessionListEntry | undefined {
  let meta: MetaFile;
  try {
    // A regular file only, not through a symlink, never blocking on a FIFO planted in its place.
    const fd = openForReading(metaPathOf(logFile));
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile() || stat.size > MAX_META_BYTES) return undefined;
      meta = JSON.parse(fs.readFileSync(fd, "utf8")) as MetaFile;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const entry = meta?.entry;
  if (meta?.version !== 1 || meta.logSize !== logSize || typeof entry !== "object" || entry === null || entry.sessionId !== sessionId) return undefined;
  if (typeof entry.title !== "string" || typeof entry.createdAt !== "number" || typeof entry.updatedAt !== "number" || typeof entry.turns !== "number") return undefined;
  // The known fields only, each of its type (parentOf): nothing else of the file reaches a listing.
  const { title, createdAt, updatedAt, turns } = entry;
  return { sessionId, title, createdAt, updatedAt, turns, ...parentOf(entry.parentSessionId, entry.origin) };
}

/**
 * Reads a session's entry from its log (open `fd`), parsing only the lines that matter: the
 * header, the first `user/message` and each `turn/start`; of every other line only its head
 * (type and time), and `size`, the bytes of the whole lines it read: what a meta written from
 * this entry must record (another process may be appending while it reads). `padded`: the last
 * line ends in spaces, so a bridge has the log open (or was killed with it open) and may write
 * over them (log-tail.ts) without changing its size: no meta may be written from this scan;
 * `spacesAt`: where they start (a line written since puts its "\n" there). Returns `undefined`
 * for a log without a whole header line.
 */
export function scanLog(fd: number): { header: SessionHeader; entry: SessionListEntry; size: number; padded: boolean; spacesAt?: number } | undefined {
  let header: SessionHeader | undefined;
  let padded = false;
  /** Where the spaces after the last line start (its next line's first byte), when padded and not read by its head only. */
  let spacesAt: number | undefined;
  let tracker: SummaryTracker | undefined;
  let titled = false;
  // A listing scans every log of the folder, chosen by no one: one file must not cost memory by
  // its size (a line of gigabytes, a sparse file without a newline). A longer line is seen by
  // its head only: its time counts, its text gives no title.
  /** Takes a line (`cut`: its head only) into the entry. */
  const take = (line: Buffer, cut: boolean): void => {
    const head = lineHead(line);
    if (!cut && ((head.type === "user/message" && !titled) || head.type === "turn/start" || head.type === undefined)) {
      let event: SessionEvent | undefined;
      try {
        event = JSON.parse(line.toString("utf8")) as SessionEvent;
      } catch {
        // A torn line holds nothing to list; but the last line's JSON, spaces and the rest of a
        // line written over them (a power loss: resume.ts) lists the event loading keeps.
        const before = jsonBeforeSpaces(line);
        event = before && keptEvent(before);
        if (!event) return;
      }
      if (!isObject(event)) return; // JSON, but no event
      tracker!.absorb(event);
      titled = tracker!.titled;
    } else if (head.time !== undefined) tracker!.absorb({ type: head.type as SessionEvent["type"], time: head.time, data: {} as never });
  };
  const size = eachLine(fd, 0, (line, start, end, cut) => {
    // A line read by its head only: its last byte before the "\n" tells (JSON ends in no space).
    padded = cut ? endsInSpace(fd, end) : end - start - 1 > line.length;
    spacesAt = padded && !cut ? start + line.length : undefined;
    if (!header) {
      if (cut) throw new Error(`the log's first line is longer than ${SCAN_LINE_CAP} bytes: no session header`);
      header = parseHeader(line);
      if (!header) throw new Error("the log does not start with a session header");
      tracker = new SummaryTracker(header);
      return true;
    }
    take(line, cut);
    return true;
  }, SCAN_LINE_CAP);
  // The last line's JSON and spaces whose "\n" a power loss lost: loading and session/read keep
  // its event (log-lines.ts `jsonOfTornTail`), so the listing does too. Looked for only past the
  // whole lines, and scanned, not read, beyond SCAN_LINE_CAP. The log is then no whole lines: a
  // load rewrites its end, so no meta is written from this scan (`padded`).
  const fileSize = header ? fs.fstatSync(fd).size : size;
  // One byte past the cap tells a line longer than it, seen by its head only.
  const torn = jsonOfTornTail(fd, size, fileSize, SCAN_LINE_CAP + 1);
  if (torn) {
    const cut = torn.length > SCAN_LINE_CAP;
    if (cut || keptEvent(torn)) {
      take(cut ? torn.subarray(0, SCAN_LINE_CAP) : torn, cut);
      padded = true;
      spacesAt = undefined;
    }
  }
  return header && tracker ? { header, entry: tracker.entry(), size, padded, ...(spacesAt === undefined ? {} : { spacesAt }) } : undefined;
}

/** Whether the line of `fd` that ends at `end` (after its "\n") has a space before its "\n". */
function endsInSpace(fd: number, end: number): boolean {
  return end >= 2 && byteAt(fd, end - 2) === 0x20;
}
