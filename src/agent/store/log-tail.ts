/**
 * The end of a session log this process writes: where the next line goes, and the spaces kept
 * ahead of it so that a turn's lines overwrite bytes the file already has.
 *
 * Why: a turn is made durable by syncing its log. An append grows the file, so the sync must
 * also write the inode (the new size; on a journaled file system, a journal commit). Lines
 * written over spaces the file already holds change no size, so `fdatasync` writes the data
 * alone: on a journaled ext4 that halves what the log adds to a turn; on ext4 without a
 * journal the turn's other metadata (the lock) leaves no gain (bench/README.md, round 15).
 * Databases keep their write-ahead logs preallocated for the same reason.
 *
 * The file stays a JSONL file at every byte: the spaces trail the last line's JSON, and JSON
 * allows whitespace after a value, so any reader that parses line by line reads the same
 * events (log-lines.ts strips them):
 *
 *     {"type":"session-header",…}\n{…}\n{last event}␠␠␠…␠␠\n
 *
 * A line is appended by writing "\n" and its JSON at `end` (the byte after the last line's JSON,
 * a space, or the final "\n" when no spaces are left); a line longer than the spaces runs past
 * them and is followed by new ones (`padFor`) and the final "\n", which grows the file once in
 * many turns. Another process's line written since begins with the "\n" that `untouched` looks
 * for. A failed write is cut back to `end` + "\n", so the log is whole lines again and the
 * spaces are gone until the next line. The spaces go when the log is
 * closed (`trim`) or loaded again (resume.ts): a log no bridge has open ends in its last
 * line's "\n", as it always did.
 *
 * Torn writes stay what they were: a kill in the middle of a line leaves a last line that does
 * not parse (its JSON cut, the old spaces after it) or one without "\n", and loading drops
 * either; after a power loss, what was written over synced spaces since the last sync reads
 * back as those spaces, or the line cut the same way, or (its first page lost, a later one
 * kept) as the rest of the line after the old spaces, glued onto the synced last line: loading
 * keeps that line's JSON and cuts the rest (resume.ts, log-lines.ts `jsonBeforeSpaces`).
 *
 * @module
 */
import * as fs from "node:fs";
import { byteAt } from "./log-lines.js";

/** The spaces kept ahead of the next line: an eighth of the log, 16 KiB to 256 KiB. */
const MIN_PAD = 16 * 1024;
const MAX_PAD = 256 * 1024;

/** The spaces to leave after a line that ends at byte `at`. */
export function padFor(at: number): number {
  return Math.min(MAX_PAD, Math.max(MIN_PAD, at >> 3));
}

/** `MAX_PAD` spaces and a "\n": every padding written is a tail of it (made on the first, not at start-up). */
let spaces: Buffer | undefined;
function paddingOf(pad: number): Buffer {
  if (!spaces) {
    spaces = Buffer.alloc(MAX_PAD + 1, 0x20);
    spaces[MAX_PAD] = 0x0a;
  }
  return spaces.subarray(MAX_PAD - pad);
}
const NEWLINE = Buffer.from("\n");
const SPACE = 0x20;

/** Writes `bytes` whole at `position`; returns their length. */
function writeAt(fd: number, bytes: Buffer, position: number): number {
  for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset, position + offset);
  return bytes.length;
}

/** The tail of the log open on `fd`, which ends in its last line's "\n" when this is made. */
export class LogTail {
  /** Where the next line's "\n" goes: after the last line's JSON. */
  end: number;
  /** The file's size: `end`, the spaces ahead and the final "\n". */
  size: number;

  constructor(
    private readonly fd: number,
    size: number,
  ) {
    this.size = size;
    this.end = size - 1;
  }

  /**
   * Appends one line: `text` (a JSON text without its "\n"), or `pieces` whose last one ends
   * with "\n" (json-line.ts). On a failure the log is cut back to whole lines and the error
   * thrown.
   */
  append(line: string | Iterable<Buffer>): void {
    let at = this.end;
    try {
      if (typeof line === "string") at += writeAt(this.fd, Buffer.from(`\n${line}`, "utf8"), at);
      else {
        at += writeAt(this.fd, NEWLINE, at);
        // Each piece is written once the next one exists: the last one goes without its "\n".
        let held: Buffer | undefined;
        for (const piece of line) {
          if (held) at += writeAt(this.fd, held, at);
          held = piece;
        }
        if (held) at += writeAt(this.fd, held.subarray(0, held.length - 1), at);
      }
      // Past the spaces (or onto the final "\n"): new spaces and the final "\n" after the line.
      if (at > this.size - 1) this.size = at + this.closeLine(at);
    } catch (error) {
      // Cut back to the last whole line, whatever of this one was written.
      try {
        this.cutAfter(this.end);
      } catch {
        // the torn line stays; loading drops it when nothing whole follows it
      }
      throw error;
    }
    this.end = at;
  }

  /**
   * Ends a line that ran past the spaces at `at`: new spaces and the final "\n", or, where the
   * file has no room for the spaces (a full disk, a file size limit), the "\n" alone. Returns
   * the bytes the file grew by from `at`.
   */
  private closeLine(at: number): number {
    try {
      return writeAt(this.fd, paddingOf(padFor(at)), at);
    } catch {
      fs.ftruncateSync(this.fd, at);
      return writeAt(this.fd, NEWLINE, at);
    }
  }

  /** Whether no other process wrote a line since this one's last (its first byte would be at `end`). */
  untouched(): boolean {
    if (this.size === this.end + 1) return true; // no spaces: a line would have grown the file
    return byteAt(this.fd, this.end) === SPACE;
  }

  /** The spaces removed: the log ends in its last line's "\n". */
  trim(): void {
    if (this.size > this.end + 1) this.cutAfter(this.end);
  }

  /** The file ends in a "\n" at `at`: that byte written first, so no moment leaves the last line without one. */
  private cutAfter(at: number): void {
    fs.writeSync(this.fd, NEWLINE, 0, 1, at);
    fs.ftruncateSync(this.fd, at + 1);
    this.size = at + 1;
  }
}
