/**
 * `session/rewind`'s file part: puts the workspace files changed by turns `turn…` back as they
 * were before `turn`, from the session's checkpoint journal (store.ts), which survives a
 * restart.
 *
 * - The turns undone are the journal's turn records numbered `turn` or later, less what an
 *   earlier file rewind of a turn ≤ theirs already handled ("spent"): only the paths it left
 *   as conflicts stay, so a rewind refused for a conflict can be asked again with `force`. A turn
 *   whose record is missing (the bridge was killed mid-turn) is undone from the captures
 *   journaled before its file tools wrote.
 * - Each path goes back to its state before the first of those turns that changed it: its
 *   content and permission bits, a link, or — when it did not exist — removed.
 * - A path whose content now is not what the session last wrote (the last turn record or
 *   rewind that touched it) was changed by someone else: it is a conflict, left as it is,
 *   unless `force`. A turn cut short left no "last written" state: its paths are conflicts
 *   unless they already hold their old state, or `force`.
 * - What was done is journaled (a rewind record with the states it left), so the next rewind
 *   knows what the session last wrote, and which turns are spent.
 * - A rewind that changes files keeps their state first (`capture`, below): its own checkpoint,
 *   a turn numbered after the session's last one (`rewind` set, rewind-session.ts), which
 *   undid some turns (`undid`: the turns its journal record spent). A rewind to `turn` undoes
 *   such a turn (from `turn` on) only when every turn it undid is before `turn` — a rewind to
 *   it, or to a later turn, undoes it, putting their changes back. When it undid `turn` or a
 *   later one, it is left out (and not spent): what it did is part of going back to before
 *   `turn` (those turns are spent), and undoing it would put their changes back.
 *
 * - A content kept as a blob of the repository (git-objects.ts) is read back with
 *   `git cat-file --batch` and written only when its SHA-256 is the one recorded: a blob the
 *   repository no longer holds (a gc pruned it) leaves its path not restored (`unrestored`,
 *   like a content the size cap kept out), and the rest of the rewind goes on.
 *
 * Writing goes through restore-fs.ts (no link followed, nothing outside the workspace).
 *
 * @module
 */
import type { UnrestoredTurn } from "../../protocol/index.js";
import { readBlobs } from "./git-objects.js";
import { Pacer, sameContent, sameState, sha256, type PathState } from "./path-state.js";
import { removePath, restoreFile, restoreLink, RestoreRefused } from "./restore-fs.js";
import type { SessionCheckpoints } from "./session-checkpoints.js";
import type { ChangedPath, JournalRecord } from "./store.js";

/** One turn's changes as the journal holds them. */
export interface TurnChanges {
  turn: number;
  kind: "files" | "git";
  entries: ChangedPath[];
  uncovered: string[];
  skipped: string[];
  /** Undone already by a file rewind. */
  spent: boolean;
  /** The turn record is missing: built from the captures. */
  partial: boolean;
  /** A rewind's own checkpoint: the turn that rewind went back to. */
  rewind?: number;
  /** A rewind's own checkpoint: the turns that rewind undid (unknown when its record is missing). */
  undid?: number[];
  /** Entries whose change may be another session's (`true`: all of them): conflicts unless `force` (shared-workspace.ts). */
  shared?: true | Set<string>;
}

/** The journal read as turns, the state each path was last left in by the session, and the turns cut from the history. */
export interface JournalView {
  turns: TurnChanges[];
  lastWritten: Map<string, PathState | undefined>;
  /** Turns a conversation rewind cut from the history (never rewindable again). */
  cut: Set<number>;
}

export function readJournal(records: JournalRecord[]): JournalView {
  const turns: TurnChanges[] = [];
  // Open (record-less) turns by number and whether they are a rewind's: a turn cut short after a
  // rewind cut short can take the same number (neither reached the log).
  const open = new Map<string, TurnChanges>();
  const key = (r: { turn: number; rewind?: number }) => `${r.turn}${r.rewind === undefined ? "" : "r"}`;
  // The paths of an open turn's entries, by the entries array (a rewind record replaces it): a
  // capture of a path it holds already is found without a search of them all (a rewind's own
  // checkpoint journals a capture per path, and a search per capture was quadratic).
  const pathsOf = new WeakMap<ChangedPath[], Set<string>>();
  const lastWritten = new Map<string, PathState | undefined>();
  const cut = new Set<number>();
  // The turns the last file rewind undid, for its own turn record (journaled right after it).
  let undid: number[] | undefined;
  for (const r of records) {
    const lastUndid = undid;
    undid = undefined;
    switch (r.type) {
      case "capture":
      case "skip": {
        let partial = open.get(key(r));
        if (!partial) {
          partial = { turn: r.turn, kind: "files", entries: [], uncovered: [], skipped: [], spent: false, partial: true, ...(r.rewind !== undefined ? { rewind: r.rewind } : {}) };
          open.set(key(r), partial);
          turns.push(partial);
        }
        if (r.type === "capture") {
          let paths = pathsOf.get(partial.entries);
          if (!paths) pathsOf.set(partial.entries, (paths = new Set(partial.entries.map((e) => e.path))));
          if (!paths.has(r.path)) {
            paths.add(r.path);
            partial.entries.push({ path: r.path, before: r.before });
          }
        }
        if (r.type === "skip") partial.skipped.push(r.path);
        lastWritten.set(r.path, undefined);
        break;
      }
      case "turn": {
        const whole: TurnChanges = { turn: r.turn, kind: r.kind, entries: r.entries, uncovered: r.uncovered, skipped: r.skipped, spent: false, partial: false };
        if (r.shared !== undefined) whole.shared = r.shared === true ? true : new Set(r.shared);
        if (r.rewind !== undefined) Object.assign(whole, { rewind: r.rewind, ...(lastUndid ? { undid: lastUndid } : {}) });
        const partial = open.get(key(r));
        if (partial) turns.splice(turns.indexOf(partial), 1, whole);
        else turns.push(whole);
        open.delete(key(r));
        for (const e of r.entries) lastWritten.set(e.path, e.after);
        break;
      }
      case "rewind":
        if (r.files) {
          const left = new Set(r.conflicts ?? []);
          undid = [];
          for (const t of turns) {
            if (!undoneBy(t, r.turn) || t.turn > r.lastTurn || t.spent) continue;
            undid.push(t.turn);
            t.entries = t.entries.filter((e) => left.has(e.path));
            t.uncovered = [];
            t.skipped = [];
            t.spent = t.entries.length === 0;
          }
        }
        if (r.conversation) for (let t = r.turn; t <= r.lastTurn; t++) cut.add(t);
        for (const s of r.states) lastWritten.set(s.path, s.state);
        break;
    }
  }
  return { turns, lastWritten, cut };
}

/**
 * Whether a rewind to `turn` undoes `t` (not spent yet): a turn from `turn` on; a rewind's own
 * checkpoint only when every turn it undid is before `turn` (see the module comment). A rewind
 * killed before its turn record was journaled (captures only) is never undone: its number was
 * never logged, and a later turn may have taken it.
 */
function undoneBy(t: TurnChanges, turn: number): boolean {
  if (t.turn < turn) return false;
  if (t.rewind === undefined) return true;
  return t.undid !== undefined && t.undid.every((u) => u < turn);
}

/**
 * Keeps the current state of the paths a rewind is about to write or remove (none touched
 * yet), and returns the states it kept, by path.
 */
export type RewindCapture = (paths: string[]) => Promise<Map<string, PathState>>;

export interface FilesRewound {
  restored: string[];
  removed: string[];
  conflicts: string[];
  unrestored: UnrestoredTurn[];
  /** The states this rewind left, for its journal record. */
  states: Array<{ path: string; state: PathState }>;
}

/** Contents read back from the repository at most this many bytes at a time (by the sizes the checkpoint recorded). */
const GIT_READ_CHUNK = 32 * 1024 * 1024;

/**
 * The contents of the paths to restore (`order`, sorted) that are references to blobs of the
 * repository, read in chunks as the rewind reaches them: one `cat-file --batch` per chunk.
 */
class GitContents {
  private next = 0;
  private chunk = new Map<string, Buffer>();
  /** The ids the current chunk asked for (a missing one is absent from `chunk`). */
  private asked = new Set<string>();
  private readonly position = new Map<string, number>();

  constructor(
    private readonly workspace: string,
    private readonly order: Array<{ rel: string; id: string; size: number }>,
  ) {
    order.forEach((o, i) => this.position.set(o.rel, i));
  }

  /** The content of `rel`'s blob; `undefined` when the repository no longer holds it. */
  async get(rel: string, id: string): Promise<Buffer | undefined> {
    if (!this.asked.has(id)) {
      const from = this.position.get(rel);
      if (from === undefined) return undefined;
      const ids: string[] = [];
      let bytes = 0;
      for (let i = Math.max(from, this.next); i < this.order.length && (ids.length === 0 || bytes + this.order[i].size <= GIT_READ_CHUNK); i++) {
        ids.push(this.order[i].id);
        bytes += this.order[i].size;
        this.next = i + 1;
      }
      if (!ids.includes(id)) ids.unshift(id);
      this.asked = new Set(ids);
      this.chunk = await readBlobs(this.workspace, ids);
    }
    return this.chunk.get(id);
  }
}

/**
 * Puts back the files of turns `turn…` (see the module comment); journals nothing but what
 * `capture` does, called once with the paths about to change, before any is touched.
 */
export async function rewindFiles(cp: SessionCheckpoints, view: JournalView, turn: number, force: boolean, capture?: RewindCapture): Promise<FilesRewound> {
  const undone = view.turns.filter((t) => undoneBy(t, turn) && !t.spent);
  // Each path's old state, and the turn a lost path is reported under: the first undone turn that
  // changed it (one map lookup a path, so a pass over ten thousand paths stays linear).
  const target = new Map<string, PathState>();
  const firstTurn = new Map<string, number>();
  // Paths an undone turn marked as maybe another session's change: never undone without `force`,
  // whichever turn wrote them last (a later turn of this session writing one does not make the
  // other session's change this session's).
  const shared = new Set<string>();
  for (const t of undone) {
    for (const e of t.entries) {
      if (t.shared === true || t.shared?.has(e.path)) shared.add(e.path);
      if (target.has(e.path)) continue;
      target.set(e.path, e.before);
      firstTurn.set(e.path, t.turn);
    }
  }
  const order = [...target.keys()].sort();
  const fromGit: Array<{ rel: string; id: string; size: number }> = [];
  const pacer = new Pacer();
  for (const rel of order) {
    if (pacer.due()) await pacer.pace();
    const before = target.get(rel)!;
    if (before?.t === "file" && before.git !== undefined && !cp.store.has(before.hash)) fromGit.push({ rel, id: before.git, size: before.size });
  }
  const gitContents = new GitContents(cp.workspace, fromGit);
  const out: FilesRewound = { restored: [], removed: [], conflicts: [], unrestored: [], states: [] };
  const lost = new Map<number, Set<string>>();
  const loseOne = (rel: string) => {
    const turn = firstTurn.get(rel) ?? undone[0].turn;
    if (!lost.has(turn)) lost.set(turn, new Set());
    lost.get(turn)!.add(rel);
  };
  // What changes: the paths not already in their old state, less someone else's changes (unless force).
  const planned: Array<{ rel: string; before: PathState; now: PathState }> = [];
  for (const rel of order) {
    if (pacer.due()) await pacer.pace();
    const before = target.get(rel)!;
    const now = cp.look(rel);
    if (sameState(now, before)) continue;
    const written = view.lastWritten.get(rel);
    if ((!force && (written === undefined || shared.has(rel) || !sameContent(now, written))) || (before === null && now?.t === "other")) {
      out.conflicts.push(rel);
      continue;
    }
    // No content to put back (not kept, or nothing a file can be made from): not touched, not captured.
    if (before?.t === "other" || (before?.t === "file" && before.git === undefined && !cp.store.has(before.hash))) {
      loseOne(rel);
      continue;
    }
    planned.push({ rel, before, now });
  }
  const kept = planned.length > 0 && capture ? await capture(planned.map((p) => p.rel)) : undefined;
  for (const { rel, before, now } of planned) {
    if (pacer.due()) await pacer.pace();
    // Changed between the look and the capture: someone else's change after all.
    if (kept && !force && !sameState(kept.get(rel) ?? null, now)) {
      out.conflicts.push(rel);
      continue;
    }
    try {
      let bytes: Buffer | undefined;
      if (before?.t === "file") {
        bytes = cp.store.get(before.hash);
        // Kept as a blob of the repository: read back raw, and only if it is still that content.
        if (!bytes && before.git !== undefined) {
          const blob = await gitContents.get(rel, before.git);
          if (blob && sha256(blob) === before.hash) bytes = blob;
        }
        if (!bytes) {
          loseOne(rel);
          continue;
        }
      }
      // Changed since the capture kept it (or, without one, since the look): someone else's change
      // let in while this loop yielded or read from git, which the rewind's own checkpoint does
      // not hold. Looked at with nothing awaited between the look and the write.
      if (!sameState(cp.look(rel), kept ? (kept.get(rel) ?? null) : now)) {
        out.conflicts.push(rel);
        continue;
      }
      if (before === null) {
        removePath(cp.root, rel);
        out.removed.push(rel);
      } else if (before.t === "file") {
        restoreFile(cp.root, rel, bytes!, before.mode);
        out.restored.push(rel);
      } else if (before.t === "link") {
        restoreLink(cp.root, rel, before.target);
        out.restored.push(rel);
      } else {
        loseOne(rel);
        continue;
      }
      out.states.push({ path: rel, state: before });
    } catch (error) {
      // A link or file where a folder must be, a folder moved away meanwhile: left alone, as someone else's change.
      if (error instanceof RestoreRefused || isFsError(error)) out.conflicts.push(rel);
      else throw error;
    }
  }
  const putBack = new Set([...out.restored, ...out.removed]);
  for (const t of undone) {
    const paths = new Set([...(lost.get(t.turn) ?? []), ...t.skipped.filter((p) => !putBack.has(p))]);
    if (t.uncovered.length > 0 || paths.size > 0) out.unrestored.push({ turn: t.turn, tools: t.uncovered, paths: [...paths].sort() });
  }
  out.unrestored.sort((a, b) => a.turn - b.turn);
  out.conflicts.sort();
  return out;
}

function isFsError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && /^E[A-Z]+$/.test(code);
}
