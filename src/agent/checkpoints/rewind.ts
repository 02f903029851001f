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
 *
 * Writing goes through restore-fs.ts (no link followed, nothing outside the workspace).
 *
 * @module
 */
import type { UnrestoredTurn } from "../../protocol/index.js";
import { sameContent, sameState, type PathState } from "./path-state.js";
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
  const open = new Map<number, TurnChanges>();
  const lastWritten = new Map<string, PathState | undefined>();
  const cut = new Set<number>();
  for (const r of records) {
    switch (r.type) {
      case "capture":
      case "skip": {
        let partial = open.get(r.turn);
        if (!partial) {
          partial = { turn: r.turn, kind: "files", entries: [], uncovered: [], skipped: [], spent: false, partial: true };
          open.set(r.turn, partial);
          turns.push(partial);
        }
        if (r.type === "capture" && !partial.entries.some((e) => e.path === r.path)) partial.entries.push({ path: r.path, before: r.before });
        if (r.type === "skip") partial.skipped.push(r.path);
        lastWritten.set(r.path, undefined);
        break;
      }
      case "turn": {
        const whole: TurnChanges = { turn: r.turn, kind: r.kind, entries: r.entries, uncovered: r.uncovered, skipped: r.skipped, spent: false, partial: false };
        const partial = open.get(r.turn);
        if (partial) turns.splice(turns.indexOf(partial), 1, whole);
        else turns.push(whole);
        open.delete(r.turn);
        for (const e of r.entries) lastWritten.set(e.path, e.after);
        break;
      }
      case "rewind":
        if (r.files) {
          const left = new Set(r.conflicts ?? []);
          for (const t of turns) {
            if (t.turn < r.turn || t.spent) continue;
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

export interface FilesRewound {
  restored: string[];
  removed: string[];
  conflicts: string[];
  unrestored: UnrestoredTurn[];
  /** The states this rewind left, for its journal record. */
  states: Array<{ path: string; state: PathState }>;
}

/** Puts back the files of turns `turn…` (see the module comment); journals nothing (the caller does). */
export function rewindFiles(cp: SessionCheckpoints, view: JournalView, turn: number, force: boolean): FilesRewound {
  const undone = view.turns.filter((t) => t.turn >= turn && !t.spent);
  const target = new Map<string, PathState>();
  for (const t of undone) for (const e of t.entries) if (!target.has(e.path)) target.set(e.path, e.before);
  const out: FilesRewound = { restored: [], removed: [], conflicts: [], unrestored: [], states: [] };
  const lost = new Map<number, Set<string>>();
  const loseOne = (rel: string) => {
    const t = undone.find((u) => u.entries.some((e) => e.path === rel)) ?? undone[0];
    if (!lost.has(t.turn)) lost.set(t.turn, new Set());
    lost.get(t.turn)!.add(rel);
  };
  for (const rel of [...target.keys()].sort()) {
    const before = target.get(rel)!;
    const now = cp.look(rel);
    if (sameState(now, before)) continue;
    const written = view.lastWritten.get(rel);
    if (!force && (written === undefined || !sameContent(now, written))) {
      out.conflicts.push(rel);
      continue;
    }
    try {
      if (before === null) {
        if (now?.t === "other") {
          out.conflicts.push(rel);
          continue;
        }
        removePath(cp.root, rel);
        out.removed.push(rel);
      } else if (before.t === "file") {
        const bytes = cp.store.get(before.hash);
        if (!bytes) {
          loseOne(rel);
          continue;
        }
        restoreFile(cp.root, rel, bytes, before.mode);
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
  for (const t of undone) {
    const paths = new Set([...(lost.get(t.turn) ?? []), ...t.skipped.filter((p) => !out.restored.includes(p) && !out.removed.includes(p))]);
    if (t.uncovered.length > 0 || paths.size > 0) out.unrestored.push({ turn: t.turn, tools: t.uncovered, paths: [...paths].sort() });
  }
  out.unrestored.sort((a, b) => a.turn - b.turn);
  return out;
}

function isFsError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && /^E[A-Z]+$/.test(code);
}
