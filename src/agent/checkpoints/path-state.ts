/**
 * The state of one workspace path as checkpoints see it, and how it is read: never through a
 * symbolic link, never blocking on a FIFO, and never from outside the workspace.
 *
 * Invariant: `readState(root, rel)` describes the entry named `rel` under the real workspace
 * root itself. A file is read only through a descriptor whose real path (read from the kernel,
 * `/proc/self/fd/N`) is exactly `root/rel`: a folder on the way swapped for a symbolic link
 * (to `~/.ssh`, say) makes the path `other`, and nothing of what it points to is kept — or
 * later written back into the workspace by a rewind.
 *
 * @module
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * A path's state: absent, a regular file (content hash, permission bits), a symbolic link, or
 * anything else (a folder, a FIFO, a path under a link). A file's `git`, when present: its
 * content is that blob of the user's repository (the index recorded it), and the store holds
 * no copy (git-objects.ts); it says where the content is, not what it is (`hash` does).
 */
export type PathState = null | FileState | { t: "link"; target: string } | { t: "other" };

/** A regular file's state (see `PathState`). */
export interface FileState {
  t: "file";
  hash: string;
  mode: number;
  size: number;
  git?: string;
}

/** Files larger than this are not checkpointed (their path is `checkpoint/skipped`). */
export const MAX_CHECKPOINT_FILE_BYTES = 64 * 1024 * 1024;

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;

/**
 * How far a file's last change must lie before its read for the read's stat to vouch for the
 * content later (git's "racily clean" entries). A write stamps the file with the time of the
 * clock tick it falls in, so a rewrite of the same size in the tick of an earlier write, after
 * the read, leaves inode, size, mode, mtime and ctime all as the read saw them. A file changed
 * less than this before its read is read again at the next pass. Two seconds: the coarsest
 * timestamps a work tree may have (FAT's mtime); a file the turn just wrote is read twice.
 */
export const RACY_MS = 2_000;

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Whether two states are the same (content and mode for files). */
export function sameState(a: PathState, b: PathState): boolean {
  if (a === null || b === null) return a === b;
  if (a.t === "file" && b.t === "file") return a.hash === b.hash && a.mode === b.mode;
  if (a.t === "link" && b.t === "link") return a.target === b.target;
  return a.t === b.t;
}

/** Whether two states hold the same content (modes aside): what "the session last wrote it" compares. */
export function sameContent(a: PathState, b: PathState): boolean {
  if (a?.t === "file" && b?.t === "file") return a.hash === b.hash;
  return sameState(a, b);
}

/**
 * A workspace-relative path as checkpoints key it: normalized, relative, inside. `undefined`
 * for anything else (absolute, `..`, empty, NUL): such a path is never read or written.
 */
export function safeRelative(rel: string): string | undefined {
  if (typeof rel !== "string" || rel.length === 0 || rel.length > 4096 || rel.includes("\0")) return undefined;
  if (path.isAbsolute(rel)) return undefined;
  // Already normal (what git lists): no empty, "." or ".." segment, no trailing slash.
  if (!NOT_NORMAL.test(rel)) return rel;
  const norm = path.normalize(rel);
  if (norm === "." || norm === ".." || norm.startsWith(`..${path.sep}`) || norm.endsWith(path.sep)) return undefined;
  return norm;
}

const NOT_NORMAL = /(^|\/)\.{0,2}(\/|$)/;

/**
 * `path.join(root, rel)` for a real (normalized, absolute) `root`. A `rel` already normal (what
 * git lists, what `safeRelative` returns) is appended as it is: a walk makes this string for
 * every file, and `path.join` normalizes the whole of it again each time (bench/README.md,
 * "Issue 34, round 19"). Anything else (`..`, empty or `.` segments, absolute) goes through
 * `path.join`, so the path named is the one it always was.
 */
export function underRoot(root: string, rel: string): string {
  if (rel.length === 0 || NOT_NORMAL.test(rel)) return path.join(root, rel);
  return root.endsWith("/") ? root + rel : `${root}/${rel}`;
}

/** The stat fields that tell a file changed (the snapshot's cache key; times in ms with their sub-ms fraction). */
export interface StatKey {
  ino: number;
  size: number;
  mtime: number;
  ctime: number;
  mode: number;
}

export function statKey(st: fs.Stats): StatKey {
  return { ino: st.ino, size: st.size, mtime: st.mtimeMs, ctime: st.ctimeMs, mode: st.mode };
}

/** Whether `st` is the stat `key` was made from (every field of `statKey(st)` equal, without making it). */
function statMatches(key: StatKey, st: fs.Stats): boolean {
  return key.ino === st.ino && key.size === st.size && key.mtime === st.mtimeMs && key.ctime === st.ctimeMs && key.mode === st.mode;
}

/**
 * A file read before: its stat key and the state (its hash included) made from it. A pass that
 * finds the file's stat unchanged answers with these very objects (states are never changed once
 * made), so a walk over an unchanged tree makes no new state for any of its files.
 */
export interface KnownFile {
  stat: StatKey;
  state: FileState;
}

/**
 * Lets a pass over many paths (a snapshot, a turn's end, a rewind) give the event loop a turn
 * now and then. Each path is read synchronously (up to `MAX_CHECKPOINT_FILE_BYTES`), and the
 * workspace decides how many there are: a model that made ten thousand 60 MB sparse files with
 * one `truncate` would otherwise hold the whole bridge for half an hour — no request read, no
 * `session/cancel`, no other session's turn. Invariant: a pass never runs more than about
 * `SLICE_MS` (plus one file's read) without yielding.
 */
export class Pacer {
  static readonly SLICE_MS = 25;
  private since = performance.now();

  /**
   * Whether the current slice is used up. A pass asks this after each path and awaits `pace()`
   * only then: an await per path is a microtask hop per path, a walk of ten thousand files'
   * worth of them.
   */
  due(): boolean {
    return performance.now() - this.since >= Pacer.SLICE_MS;
  }

  /** Yields (a macrotask: I/O is served) once the current slice is used up. */
  async pace(): Promise<void> {
    if (!this.due()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}

/** What `readState` found, with the file's bytes when it was read. */
export interface ReadPath {
  state: PathState;
  bytes?: Buffer;
  /** The stat the state stands for at later passes; absent when it cannot (`RACY_MS`). */
  stat?: StatKey;
  /** A regular file over `MAX_CHECKPOINT_FILE_BYTES`, or one that could not be read: its state is `other`. */
  unreadable?: boolean;
}

/**
 * The real paths of folders, resolved once per pass over many paths (a snapshot): a folder
 * swapped meanwhile is still caught where it matters, on the descriptor of a file read.
 */
export type FolderCache = Map<string, string | undefined>;

/**
 * Reads the state of `rel` under the real root `root`. `known` is what an earlier read found:
 * when the file's stat still matches it, the file is not read again (`bytes` is then absent),
 * and the answer is `known`'s own state and stat key.
 */
export function readState(root: string, rel: string, known?: KnownFile, folders?: FolderCache): ReadPath {
  const absolute = underRoot(root, rel);
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(absolute, { throwIfNoEntry: false });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A path through something that is not a folder (or a loop of links) holds no file.
    if (code === "ENOTDIR" || code === "ELOOP") return { state: { t: "other" } };
    return { state: { t: "other" }, unreadable: true };
  }
  if (st === undefined) return { state: null };
  // The folder it is in must be the folder of that name in the workspace, reached without a link.
  const dir = path.dirname(absolute);
  let realDir = folders?.get(dir);
  if (realDir === undefined || !folders?.has(dir)) {
    try {
      realDir = fs.realpathSync.native(dir);
    } catch {
      realDir = undefined;
    }
    folders?.set(dir, realDir);
  }
  if (realDir !== dir) return { state: { t: "other" } };
  if (st.isSymbolicLink()) {
    try {
      return { state: { t: "link", target: fs.readlinkSync(absolute) } };
    } catch {
      return { state: { t: "other" } };
    }
  }
  if (!st.isFile()) return { state: { t: "other" } };
  // The same stat, mode bits and size included: the state made from it is the same too. The
  // answer is `known` itself (a `ReadPath` without bytes): a walk of an unchanged tree makes
  // no object for its files.
  if (known && statMatches(known.stat, st)) return known;
  if (st.size > MAX_CHECKPOINT_FILE_BYTES) return { state: { t: "other" }, unreadable: true };
  let fd: number;
  try {
    fd = fs.openSync(absolute, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { state: null };
    return { state: { t: "other" }, unreadable: code !== "ELOOP" };
  }
  try {
    const held = fs.fstatSync(fd);
    if (!held.isFile() || held.size > MAX_CHECKPOINT_FILE_BYTES) return { state: { t: "other" }, unreadable: held.isFile() };
    // Verified on the descriptor: the very file at root/rel, not one a swapped folder led to.
    if (process.platform === "linux" && fs.readlinkSync(`/proc/self/fd/${fd}`) !== absolute) return { state: { t: "other" } };
    const readAt = Date.now();
    const bytes = readWhole(fd, held.size);
    const state: FileState = { t: "file", hash: sha256(bytes), mode: held.mode & 0o7777, size: bytes.length };
    // No stat key for a file changed too close to its read (or in the future): it cannot tell a
    // later rewrite in the same tick from this content, so the next pass reads the file again.
    if (readAt - Math.max(held.mtimeMs, held.ctimeMs) < RACY_MS) return { state, bytes };
    return { state, bytes, stat: statKey(held) };
  } catch {
    return { state: { t: "other" }, unreadable: true };
  } finally {
    fs.closeSync(fd);
  }
}

function readWhole(fd: number, size: number): Buffer {
  let buf = Buffer.allocUnsafe(Math.max(size, 0) + 1);
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      if (buf.length > MAX_CHECKPOINT_FILE_BYTES) throw new Error("file grew past the checkpoint limit");
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const n = fs.readSync(fd, buf, length, buf.length - length, length);
    if (n === 0) break;
    length += n;
  }
  return buf.subarray(0, length);
}
