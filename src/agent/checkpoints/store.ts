/**
 * A session's checkpoint store, beside its log: `<sessionId>.checkpoints/` holding `blobs/`
 * (file contents, content-addressed by SHA-256) and `journal.jsonl` (what each turn changed and
 * what each rewind did). A content that is a blob of the user's git repository is not in
 * `blobs/`: its state names the blob (`git`, git-objects.ts). Same privacy as the log: folders 0700, files 0600, whatever the umask;
 * a symbolic link planted in place of the folder or a file is refused, never followed.
 *
 * Bounded: the blobs of one session take at most `maxBytes` (`HARNESS_CHECKPOINT_MAX_BYTES`,
 * default 512 MiB); a content that would pass it is not kept, and the caller reports the path
 * as skipped (a `checkpoint/skipped` event).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { skipTemp, tempSibling } from "../../temp-name.js";
import { checkpointsPathOf, logPath, SESSION_DIR_MODE, SESSION_FILE_MODE, writeAll } from "../store/log-format.js";
import { GIT_ID } from "./git-objects.js";
import { safeRelative, sha256, type PathState } from "./path-state.js";

/** Default per-session cap of checkpoint contents, in bytes. */
export const DEFAULT_CHECKPOINT_MAX_BYTES = 512 * 1024 * 1024;

/** The cap from the environment (`HARNESS_CHECKPOINT_MAX_BYTES`, bytes), else the default. */
export function checkpointCap(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.HARNESS_CHECKPOINT_MAX_BYTES;
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : DEFAULT_CHECKPOINT_MAX_BYTES;
}

/** One path a turn changed: its state before the turn and at the turn's end (`undefined`: the turn did not end). */
export interface ChangedPath {
  path: string;
  before: PathState;
  after?: PathState;
}

/**
 * The journal's records, in the order they happened. `rewind` (captures, skips and turn
 * records): the turn is a file rewind's own checkpoint (rewind-session.ts), numbered after the
 * session's last turn then, and `rewind` is the turn that rewind went back to.
 */
export type JournalRecord =
  /** The previous state of a path, kept before a file tool (or a rewind) changed it (written before the change). */
  | { type: "capture"; turn: number; path: string; before: PathState; rewind?: number }
  /**
   * The whole turn, at its end. `shared`: the entries (all of them: `true`) whose change may be
   * another session's, which wrote in the same workspace while this turn recorded (shared-workspace.ts).
   */
  | { type: "turn"; turn: number; kind: "files" | "git"; entries: ChangedPath[]; uncovered: string[]; skipped: string[]; rewind?: number; shared?: true | string[] }
  /** A path whose previous content was not kept. */
  | { type: "skip"; turn: number; path: string; rewind?: number }
  /** A rewind: the states it left (`states`), the paths it left as conflicts, and whether it restored files and cut the history. */
  | { type: "rewind"; turn: number; lastTurn: number; files: boolean; conversation: boolean; states: Array<{ path: string; state: PathState }>; conflicts?: string[] };

const HASH = /^[0-9a-f]{64}$/;

export class CheckpointStore {
  readonly folder: string;
  private readonly blobs: string;
  private readonly journalFile: string;
  private ready = false;
  private usedBytes: number | undefined;
  /** Hashes known to be kept (a snapshot asks for thousands): blobs are never removed while the store is open. */
  private readonly known = new Set<string>();

  constructor(
    sessionFolder: string,
    sessionId: string,
    readonly maxBytes: number = checkpointCap(),
  ) {
    this.folder = checkpointsPathOf(logPath(sessionFolder, sessionId));
    this.blobs = path.join(this.folder, "blobs");
    this.journalFile = path.join(this.folder, "journal.jsonl");
  }

  private ensure(): void {
    if (this.ready) return;
    for (const dir of [this.folder, this.blobs]) {
      if (fs.lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink()) throw new Error(`checkpoint folder ${dir} is a symbolic link; refusing to follow it`);
      fs.mkdirSync(dir, { recursive: true, mode: SESSION_DIR_MODE });
      fs.chmodSync(dir, SESSION_DIR_MODE);
    }
    this.ready = true;
  }

  /**
   * Bytes the blobs take now (summed once, then kept up to date). The walk removes the stale
   * temporaries a killed `put` left (temp-name.ts) and counts no temporary: it is no blob.
   */
  private used(): number {
    if (this.usedBytes !== undefined) return this.usedBytes;
    let total = 0;
    const now = Date.now();
    for (const sub of fs.readdirSync(this.blobs)) {
      const dir = path.join(this.blobs, sub);
      if (!fs.lstatSync(dir).isDirectory()) continue;
      for (const name of fs.readdirSync(dir)) if (!skipTemp(dir, name, now)) total += fs.lstatSync(path.join(dir, name)).size;
    }
    this.usedBytes = total;
    return total;
  }

  private blobPath(hash: string): string {
    if (!HASH.test(hash)) throw new Error(`not a content hash: ${hash.slice(0, 80)}`);
    return path.join(this.blobs, hash.slice(0, 2), hash);
  }

  /** Whether the content `hash` is kept. */
  has(hash: string): boolean {
    if (this.known.has(hash)) return true;
    this.ensure();
    const kept = fs.lstatSync(this.blobPath(hash), { throwIfNoEntry: false })?.isFile() === true;
    if (kept) this.known.add(hash);
    return kept;
  }

  /**
   * Keeps `bytes` under `hash` (already kept: nothing to do). `false`: keeping it would pass the
   * cap, and it was not kept.
   */
  put(hash: string, bytes: Buffer): boolean {
    if (this.has(hash)) return true;
    if (this.used() + bytes.length > this.maxBytes) return false;
    const file = this.blobPath(hash);
    const dir = path.dirname(file);
    fs.mkdirSync(dir, { mode: SESSION_DIR_MODE, recursive: true });
    // A turn writes its session's store under the session's lock; the name is this write's own
    // all the same (temp-name.ts), so no other writer's file is ever truncated or renamed.
    const temp = tempSibling(file);
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
    const fd = fs.openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, SESSION_FILE_MODE);
    try {
      try {
        fs.fchmodSync(fd, SESSION_FILE_MODE);
        writeAll(fd, bytes);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(temp, file);
    } catch (error) {
      fs.rmSync(temp, { force: true }); // a full disk: no half-written temporary is left
      throw error;
    }
    this.known.add(hash);
    this.usedBytes = this.used() + bytes.length;
    return true;
  }

  /** The content kept under `hash`; `undefined` when it is missing or was tampered with (its hash no longer matches). */
  get(hash: string): Buffer | undefined {
    let bytes: Buffer;
    try {
      const fd = fs.openSync(this.blobPath(hash), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try {
        if (!fs.fstatSync(fd).isFile()) return undefined;
        bytes = fs.readFileSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      return undefined;
    }
    return sha256(bytes) === hash ? bytes : undefined;
  }

  /**
   * Appends records to the journal; `sync`: fsynced before returning. A journal whose last line
   * has no end (a write cut short by a full disk or a kill) gets its end first: a record written
   * straight after it would share its line, and `journal()` leaves out a line it cannot parse,
   * so the record (a whole turn's) would be lost with the torn one.
   */
  append(records: JournalRecord[], sync = false): void {
    if (records.length === 0) return;
    this.ensure();
    const { O_RDWR, O_CREAT, O_APPEND, O_NOFOLLOW } = fs.constants;
    const fd = fs.openSync(this.journalFile, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW, SESSION_FILE_MODE);
    try {
      fs.fchmodSync(fd, SESSION_FILE_MODE);
      const text = records.map((r) => `${JSON.stringify(r)}\n`).join("");
      writeAll(fd, endsTorn(fd) ? `\n${text}` : text);
      if (sync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The journal's records; lines that are torn or not records are left out (and paths that are not safe relative ones). */
  journal(): JournalRecord[] {
    let text: string;
    try {
      const fd = fs.openSync(this.journalFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try {
        if (!fs.fstatSync(fd).isFile()) return [];
        text = fs.readFileSync(fd, "utf8");
      } finally {
        fs.closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const records: JournalRecord[] = [];
    for (const line of text.split("\n")) {
      if (line.length === 0) continue;
      let value: JournalRecord;
      try {
        value = JSON.parse(line) as JournalRecord;
      } catch {
        continue;
      }
      if (wellFormed(value)) records.push(value);
    }
    return records;
  }

  /**
   * A fork's store (`session/fork` at `turn`): the journal's records of turns up to `turn`,
   * and the rewinds made before turn `turn + 1` started (`lastTurn ≤ turn`: the fork's log
   * holds their `session/rewound`) with their own checkpoints (numbered `lastTurn + 1`), with the contents they name, hard-linked (copied where a
   * link cannot be made). Nothing of the source changes.
   */
  copyTo(target: CheckpointStore, turn: number): void {
    const records = this.journal().filter((r) => (r.type === "rewind" ? r.lastTurn : r.rewind !== undefined ? r.turn - 1 : r.turn) <= turn);
    if (records.length === 0) return;
    target.ensure();
    const hashes = new Set<string>();
    const note = (s: PathState | undefined) => {
      if (s?.t === "file") hashes.add(s.hash);
    };
    for (const r of records) {
      if (r.type === "capture") note(r.before);
      if (r.type === "turn") for (const e of r.entries) note(e.before);
      if (r.type === "rewind") for (const s of r.states) note(s.state);
    }
    for (const hash of hashes) {
      if (!this.has(hash) || target.has(hash)) continue;
      const to = target.blobPath(hash);
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: SESSION_DIR_MODE });
      try {
        fs.linkSync(this.blobPath(hash), to);
      } catch {
        const bytes = this.get(hash);
        if (bytes) target.put(hash, bytes);
      }
    }
    target.usedBytes = undefined;
    target.append(records, true);
  }

  /** Removes the store (the session was deleted). */
  remove(): void {
    if (fs.lstatSync(this.folder, { throwIfNoEntry: false })?.isDirectory()) fs.rmSync(this.folder, { recursive: true, force: true });
  }
}


/** Whether the file open at `fd` ends in a line without its end (not empty, last byte not `\n`). */
function endsTorn(fd: number): boolean {
  const size = fs.fstatSync(fd).size;
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  return fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 10;
}

/** The most turns a session's journal may name: far past any real session, and a bound on the walk over a rewind's `turn…lastTurn`. */
const MAX_JOURNAL_TURN = 1_000_000;

const turnNumber = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 1 && n <= MAX_JOURNAL_TURN;

function goodState(s: unknown): boolean {
  if (s === null) return true;
  if (typeof s !== "object") return false;
  const v = s as { t?: unknown; hash?: unknown; mode?: unknown; target?: unknown; git?: unknown };
  if (v.t === "file") return typeof v.hash === "string" && HASH.test(v.hash) && typeof v.mode === "number" && (v.git === undefined || (typeof v.git === "string" && GIT_ID.test(v.git)));
  if (v.t === "link") return typeof v.target === "string";
  return v.t === "other";
}

/**
 * Whether a journal line is a record this code can act on, every field it reads of the type it
 * expects. The journal is a file beside the log that anyone with the user's rights can edit
 * (or a crash can tear): a record that is not exactly what `append` writes is left out, never
 * half-used. Turn numbers are positive safe integers, and a rewind's `lastTurn` is one at least
 * its `turn` and at most `MAX_JOURNAL_TURN`: readJournal walks `turn…lastTurn`, so a `lastTurn`
 * of 1e300 would be a loop without end.
 */
function wellFormed(r: JournalRecord): boolean {
  if (typeof r !== "object" || r === null || !turnNumber(r.turn)) return false;
  if (r.type !== "rewind" && r.rewind !== undefined && !turnNumber(r.rewind)) return false;
  const safe = (p: unknown) => typeof p === "string" && safeRelative(p) === p;
  switch (r.type) {
    case "capture":
      return safe(r.path) && goodState(r.before);
    case "skip":
      return safe(r.path);
    case "turn":
      return (
        (r.kind === "files" || r.kind === "git") &&
        Array.isArray(r.entries) &&
        r.entries.every((e) => typeof e === "object" && e !== null && safe(e.path) && goodState(e.before) && (e.after === undefined || goodState(e.after))) &&
        Array.isArray(r.uncovered) &&
        r.uncovered.every((u) => typeof u === "string") &&
        Array.isArray(r.skipped) &&
        r.skipped.every(safe) &&
        (r.shared === undefined || r.shared === true || (Array.isArray(r.shared) && r.shared.every(safe)))
      );
    case "rewind":
      return (
        turnNumber(r.lastTurn) &&
        r.lastTurn >= r.turn &&
        r.lastTurn - r.turn <= MAX_JOURNAL_TURN &&
        typeof r.files === "boolean" &&
        typeof r.conversation === "boolean" &&
        Array.isArray(r.states) &&
        r.states.every((s) => typeof s === "object" && s !== null && safe(s.path) && goodState(s.state)) &&
        (r.conflicts === undefined || (Array.isArray(r.conflicts) && r.conflicts.every(safe)))
      );
    default:
      return false;
  }
}
