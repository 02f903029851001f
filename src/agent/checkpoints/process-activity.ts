/**
 * What the changing tools of *other bridge processes* may have done in a turn's workspace while
 * it recorded (shared-workspace.ts sees the sessions of this process; this sees the rest).
 *
 * Where they meet: the session root's `activity/` folder (0700). Every process with a session
 * log there and a watch to announce keeps one file in it, `<pid>-<random>.activity` (0600; not
 * `.jsonl`: nothing takes it for a session log), made on its first changing tool: its owner
 * line, then a line when a watch starts, before each changing tool (a file tool's path, or
 * "all"), and when the watch closes (activity-lines.ts). The session root, not a workspace's
 * folder under it: workspaces one inside another (`/repo` and `/repo/sub`) have folders of their
 * own, and must still meet. A process without a session log (`--no-session-log`), or with
 * another session root, is not seen and sees no one.
 *
 * Costs: none on a turn that runs no changing tool (nothing here runs before a watch starts, and
 * no file is made before then); one small append when a watch starts, one per changing tool and
 * one when it closes; at the watch's close, one directory read and a read of each other
 * process's file (small: see compaction). A file per process, not a shared marker: each file
 * has one writer, appends need no lock and no read, and a dead writer is told by its owner line.
 *
 * Invariant, as in shared-workspace.ts: over-noting is safe, under-noting loses work. So at its
 * close a watch notes every watch of another process that may have overlapped its window, from
 * its start (taken before its snapshot) to its close (taken after its end walk): an open one
 * whatever it started, an ended one unless it surely ended before. A line is written before the
 * tool it announces runs, and read after the walk it could have changed: a write the walk saw
 * is announced in the file read after it (no clock needed there). An end line is stamped after
 * its watch's last write.
 *
 * Crash safety. A process's exit writes `gone` in its file, or removes the file when no other
 * process has one. A process killed outright writes nothing: the first process to find it dead
 * (store/process-owner.ts `alive`: pid, start time, boot; one it cannot judge, another host's or
 * pid namespace's, after `STALE_MS` without a line) writes `gone` for it, and its watches open
 * then are taken to have lasted until that moment (its `bash` may have run until then): the
 * turn that finds it is noted, later turns are not. A gone process's file is removed by whoever
 * finds it `GRACE_MS` after it went and no open watch anywhere started before it went. A file
 * without an owner line (never made by a bridge: a whole file gets its name only once its owner
 * line is in) is removed once `GRACE_MS` old.
 *
 * Compaction: a process's own file is rewritten at a watch's close once it passes
 * `COMPACT_BYTES`, keeping the open watches and the ended ones an open watch anywhere may still
 * need (ended within `GRACE_MS`, or not surely before such a watch started); written beside,
 * then renamed over (a reader has the old whole file or the new).
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { SESSION_DIR_MODE, SESSION_FILE_MODE, writeAll } from "../store/log-format.js";
import { alive, ownerLine, seenHere, SELF } from "../store/process-owner.js";
import { goneLine, later, overlaps, parseActivity, stampNow, surelyBefore, watchLine, type ActivityFile, type Stamp } from "./activity-lines.js";

/** The folder under the session root. */
export const ACTIVITY_FOLDER = "activity";
/** How long a gone process's file (and a file without an owner) stays, at least: a watch's start and its first line are not one instant. */
export const GRACE_MS = 60_000;
/** A process this machine cannot judge (another host's, another pid namespace's) is taken as gone after this long without a line. */
export const STALE_MS = 24 * 60 * 60_000;
/** A process's own file is compacted past this size. */
export const COMPACT_BYTES = 64 * 1024;
/** Another process's file is read up to this size; a bigger one is not read, and taken as "may have changed anything". */
const MAX_READ_BYTES = 8 * 1024 * 1024;
const { O_RDONLY, O_WRONLY, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** What another process's watch may have changed, as shared-workspace.ts notes it. */
export interface ForeignWrites {
  root: string;
  full: boolean;
  opaque: boolean;
  wrote: string[];
}

/** Anything, anywhere: a file that cannot be read whole. */
const EVERYTHING: ForeignWrites = { root: "/", full: true, opaque: true, wrote: [] };

interface Found {
  file: string;
  activity: ActivityFile;
  /** Wall-clock milliseconds of its last change. */
  mtime: number;
  tooBig: boolean;
}

/** An activity file of another process: whole lines of a regular file, never through a link, never blocking on a FIFO. */
function readFound(file: string): Found | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return undefined; // gone meanwhile, or a link: nothing a bridge wrote
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return undefined;
    const size = Math.min(st.size, MAX_READ_BYTES);
    const buffer = Buffer.alloc(size);
    let got = 0;
    for (let n = 1; got < size && n > 0; got += n) n = fs.readSync(fd, buffer, got, size - got, got);
    const tooBig = st.size > MAX_READ_BYTES;
    // Too big to read: its owner line alone (the first 4 KiB) says whose it is.
    const text = buffer.toString("utf8", 0, tooBig ? Math.min(got, 4096) : got);
    const activity = parseActivity(tooBig ? text.slice(0, text.indexOf("\n") + 1) : text);
    return { file, activity, mtime: st.mtimeMs, tooBig };
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // removed by another finder meanwhile
  }
}

/** One process's announcements in one session root's activity folder, and its view of the others'. */
export class ProcessActivity {
  private fd: number | undefined;
  private file: string | undefined;
  private bytes = 0;
  private compactAt = COMPACT_BYTES;
  private nextId = 1;
  /**
   * Some of this process's lines may be missing: its file went missing (removed by hand), or an
   * append failed (a full disk, a folder that could not be made), perhaps after writing part of
   * its line, which the next line would then be glued to and lost with (a watch's start, a
   * path, an "all"). The next append that can write first ends the torn piece, then announces
   * every watch it may concern whole: its start, "all", and its end if it ended meanwhile.
   */
  private lost = false;
  /** This process's watches not yet ended in its file: their starts, start lines, and ends not yet written. */
  private readonly open = new Map<number, { start: Stamp; line: string; end?: Stamp }>();

  constructor(
    readonly folder: string,
    private readonly now: () => Stamp = stampNow,
  ) {}

  /** A watch of `root` starts at `start` (its session's mode `full`: it may write outside it): its id. */
  begin(root: string, full: boolean, start: Stamp): number {
    const id = this.nextId++;
    const line = watchLine(id, start, { root, full });
    this.open.set(id, { start, line });
    this.append(line);
    return id;
  }

  /** Watch `id` is about to run a file tool writing `abs`, or (undefined) a tool that may change anything. */
  willRun(id: number, abs: string | undefined): void {
    this.append(watchLine(id, this.now(), abs === undefined ? { all: true } : { path: abs }));
  }

  /** Watch `id` closed at `at` (after its last write); idempotent. Forgotten once its end line is written (until then it is announced again whole). */
  end(id: number, at: Stamp): void {
    const watch = this.open.get(id);
    if (!watch || watch.end) return;
    watch.end = at;
    this.append(watchLine(id, at, { end: true }));
  }

  /** Appends `line`, after whatever was missing before it. */
  private append(line: string): void {
    try {
      if (this.fd === undefined) this.make();
      else if (this.lost) line = `\n${this.announced()}${line}`; // "\n": a piece a failed write left is a line of its own, which readers leave out
      this.bytes += writeAll(this.fd!, line);
      this.lost = false;
      for (const [id, w] of this.open) if (w.end) this.open.delete(id);
    } catch {
      // A full disk, a folder that cannot be made: other processes do not see this one's tools
      // (docs/checkpoints.md) until an append can write again.
      this.lost = true;
    }
  }

  /** The lines announcing this process's watches whole, for a file that may be missing some of their lines (`lost`). */
  private announced(): string {
    let text = "";
    for (const [id, { line, end }] of this.open) text += line + watchLine(id, this.now(), { all: true }) + (end ? watchLine(id, end, { end: true }) : "");
    return text;
  }

  /** Makes this process's file, whole (owner line first) before it takes its name. */
  private make(): void {
    if (fs.lstatSync(this.folder, { throwIfNoEntry: false })?.isSymbolicLink()) throw new Error(`${this.folder} is a symbolic link`);
    fs.mkdirSync(this.folder, { recursive: true, mode: SESSION_DIR_MODE });
    const file = path.join(this.folder, `${SELF.pid}-${randomBytes(6).toString("hex")}.activity`);
    let text = ownerLine();
    if (this.lost) text += this.announced();
    this.writeBeside(file, text);
    if (this.file === undefined) leaveAtExit(this);
    this.file = file;
    this.lost = false;
  }

  /** Writes `text` to `file` through a new file renamed over it, and appends to it from now on. */
  private writeBeside(file: string, text: string): void {
    const fresh = `${file}.new`;
    // Its own name, left by a write of this process cut short; never written through a link planted there.
    fs.rmSync(fresh, { force: true });
    fs.writeFileSync(fresh, text, { mode: SESSION_FILE_MODE, flag: "wx" });
    fs.renameSync(fresh, file);
    const fd = fs.openSync(file, O_WRONLY | O_APPEND | O_NOFOLLOW);
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = fd;
    this.bytes = Buffer.byteLength(text);
  }

  /**
   * What the watches of other processes may have changed between `from` and `to` (a closing
   * watch's window): one record per watch that may have overlapped it. Tidies on the way: writes
   * `gone` for the dead, removes what no one can need, compacts this process's own file.
   */
  during(from: Stamp, to: Stamp): ForeignWrites[] {
    // The folder itself, never through a link: what is read, appended to and removed below goes
    // by its path, and a link planted as `activity` (or swapped in while this runs) would have
    // this process remove the old files of whatever folder it names. No bridge announces in a
    // linked folder (`make` refuses it), so there is nothing to read there either.
    const dir = this.realFolder();
    if (!dir) return [];
    let names: string[];
    try {
      names = fs.readdirSync(this.folder);
    } catch {
      return []; // no folder: no process announced anything
    }
    if (!this.isFolder(dir)) return [];
    const mine = this.file === undefined ? undefined : path.basename(this.file);
    if (mine !== undefined && this.fd !== undefined && !names.includes(mine)) {
      fs.closeSync(this.fd);
      this.fd = undefined;
      this.lost = true;
    }
    const now = this.now();
    const found: Found[] = [];
    for (const name of names) {
      const file = path.join(this.folder, name);
      if (name === mine || name === `${mine}.new`) continue;
      if (!name.endsWith(".activity")) {
        // A file a process was killed writing beside (`.new`), or anything else: nothing to read.
        if (this.isFolder(dir)) this.removeIfOld(file, now);
        continue;
      }
      const f = readFound(file);
      if (f) found.push(f);
    }
    const out: ForeignWrites[] = [];
    for (const f of found) {
      const { owner } = f.activity;
      if (!owner) {
        if (this.isFolder(dir)) this.removeIfOld(f.file, now);
        continue;
      }
      if (!f.activity.gone && (!alive(owner) || (!seenHere(owner) && now.t - f.mtime > STALE_MS))) {
        f.activity.gone = now;
        if (this.isFolder(dir)) this.appendTo(f.file, goneLine(now));
      }
      if (f.tooBig) {
        out.push(EVERYTHING);
        continue;
      }
      for (const w of f.activity.watches.values()) if (overlaps(w, f.activity.gone, from, to)) out.push({ root: w.root, full: w.full, opaque: w.all, wrote: w.paths });
    }
    // The watches open now, anywhere: a gone process's file, or an ended watch, stays while one of them may need it.
    const opens = [...this.open.values()].map((o) => o.start);
    for (const f of found) if (f.activity.owner && !f.activity.gone) for (const w of f.activity.watches.values()) if (!w.end) opens.push(w.start);
    for (const f of found) {
      const gone = f.activity.gone;
      if (gone && surelyBefore(later(gone, GRACE_MS), now) && opens.every((s) => surelyBefore(gone, s)) && this.isFolder(dir)) removeQuietly(f.file);
    }
    if (this.fd !== undefined && this.bytes > this.compactAt) this.compact(opens, now);
    return out;
  }

  /** The activity folder's identity when it is a folder, not a link to one (or anything else). */
  private realFolder(): fs.Stats | undefined {
    const st = fs.lstatSync(this.folder, { throwIfNoEntry: false });
    return st?.isDirectory() ? st : undefined;
  }

  /** Whether the folder's path still names the folder `dir` (checked again before each change made through it: it may be swapped for a link meanwhile). */
  private isFolder(dir: fs.Stats): boolean {
    const st = this.realFolder();
    return st !== undefined && st.dev === dir.dev && st.ino === dir.ino;
  }

  /** Appends `line` to another process's file (never through a link; one that went meanwhile needs nothing). */
  private appendTo(file: string, line: string): void {
    try {
      const fd = fs.openSync(file, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK);
      try {
        writeAll(fd, line);
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // removed by another finder meanwhile, or not ours to write
    }
  }

  /** Removes `file` once its last change is `GRACE_MS` old on the wall clock (a step makes it go sooner or later: it holds no activity). */
  private removeIfOld(file: string, now: Stamp): void {
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st && !st.isDirectory() && now.t - st.mtimeMs > GRACE_MS) removeQuietly(file);
  }

  /** Rewrites this process's file with the watches an open watch (`opens`, anywhere) may still need. */
  private compact(opens: Stamp[], now: Stamp): void {
    try {
      const mine = parseActivity(fs.readFileSync(this.file!, "utf8"));
      let text = ownerLine();
      for (const w of mine.watches.values()) {
        const end = w.end;
        const needed = !end || !surelyBefore(later(end, GRACE_MS), now) || opens.some((s) => !surelyBefore(end, s));
        if (needed) text += `${w.lines.join("\n")}\n`;
      }
      this.writeBeside(this.file!, text);
      this.compactAt = Math.max(COMPACT_BYTES, 2 * this.bytes);
    } catch {
      // left as it is: bigger, never wrong
    }
  }

  /**
   * The process exits: its file goes when no other process has one here (no one's watch can
   * need it), else it says the process is gone as of now. Watches still open end with it.
   */
  leave(): void {
    if (this.fd === undefined || this.file === undefined) return;
    try {
      const mine = path.basename(this.file);
      if (fs.readdirSync(this.folder).every((name) => name === mine)) fs.unlinkSync(this.file);
      else writeAll(this.fd, goneLine(this.now()));
      fs.closeSync(this.fd);
    } catch {
      // left as it is: a reader finds the process dead and says so for it
    }
    this.fd = undefined;
  }
}

/** The activities that made a file: each leaves at exit (one listener for all of them). */
const made = new Set<ProcessActivity>();

function leaveAtExit(activity: ProcessActivity): void {
  if (made.size === 0) process.once("exit", () => made.forEach((a) => a.leave()));
  made.add(activity);
}

const byFolder = new Map<string, ProcessActivity>();

/** This process's announcements in the activity folder of the session root holding `logFolder` (a workspace's folder of logs). */
export function activityBeside(logFolder: string): ProcessActivity {
  const folder = path.join(path.dirname(logFolder), ACTIVITY_FOLDER);
  let activity = byFolder.get(folder);
  if (!activity) byFolder.set(folder, (activity = new ProcessActivity(folder)));
  return activity;
}
