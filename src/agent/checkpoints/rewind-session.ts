/**
 * `session/rewind` on a loaded, idle session: checks the turn, puts the files back
 * (rewind.ts), journals the rewind, and cuts the history (`session/rewound`). The runtime holds
 * the session busy and under its log's lock meanwhile.
 *
 * Order: everything that can refuse the request is checked before anything changes; the files
 * are written before the history is cut, and the rewind is journaled before `session/rewound`
 * is logged, so a bridge killed in between leaves a journal that knows which files it put back.
 *
 * A rewind that changes files is itself undoable: before it writes or removes anything, the
 * current state of each path it will touch is kept (contents copied into the store, journaled
 * as `capture`s, fsynced) as a checkpoint of its own, numbered after the session's last turn
 * (`N`: the rewind consumes that number, and the next turn takes `N + 1`). At the end it is
 * journaled as a `files` turn record with `rewind` set (what the rewind changed: the state
 * before and after), and logged as `checkpoint { turn: N, files, kind: "files", rewind }`
 * after `session/rewound`. `session/rewind { turn: N, conversation: false }` then puts those
 * files back; the conversation of the turns the rewind cut is in a fork taken before it.
 *
 * @module
 */
import * as path from "node:path";
import type { CheckpointEventData, SessionRewindParams, SessionRewindResult } from "../../protocol/index.js";
import type { Session } from "../session.js";
import { Pacer, sameState, type PathState } from "./path-state.js";
import { canRestore } from "./restore-fs.js";
import { readJournal, rewindFiles, type RewindCapture } from "./rewind.js";
import type { SessionCheckpoints } from "./session-checkpoints.js";
import { SharedWorkspaceWatch, sharedField } from "./shared-workspace.js";
import type { ChangedPath, JournalRecord } from "./store.js";

/** Why a rewind was refused before it changed anything (a -32602 with this `kind`). */
export class RewindRefusal extends Error {
  constructor(
    readonly kind: "unknown-turn" | "turn-compacted" | "rewind-turn" | "rewind-unsupported",
    message: string,
    readonly turns?: number,
  ) {
    super(message);
    this.name = "RewindRefusal";
  }
}

export async function rewindSession(session: Session, checkpoints: SessionCheckpoints, params: SessionRewindParams): Promise<SessionRewindResult> {
  const { turn } = params;
  const files = params.files ?? true;
  const conversation = params.conversation ?? true;
  const lastTurn = session.nextTurnNumber() - 1;
  const view = readJournal(checkpoints.store.journal());
  if (turn < 1 || turn > lastTurn || view.cut.has(turn)) {
    const why = turn > lastTurn ? `the session has ${lastTurn} turn(s)` : `turn ${turn} was cut from the history by an earlier rewind`;
    throw new RewindRefusal("unknown-turn", `invalid params: params.turn: ${why}; turn ${turn} cannot be rewound`, lastTurn);
  }
  const rewindOf = view.turns.find((t) => t.turn === turn && t.rewind !== undefined)?.rewind;
  if (conversation && rewindOf !== undefined && !session.canCutTo(turn)) {
    throw new RewindRefusal(
      "rewind-turn",
      `invalid params: params.conversation: turn ${turn} is a rewind (to before turn ${rewindOf}), which has no conversation of its own; rewind it with conversation: false to put back the files it changed (a fork taken before it holds the conversation)`,
    );
  }
  if (conversation && !session.canCutTo(turn)) {
    throw new RewindRefusal(
      "turn-compacted",
      `invalid params: params.turn: turn ${turn} is folded into a compaction summary made after it; the history cannot be cut back to it (rewind with conversation: false to restore its files only)`,
    );
  }
  if (files && !canRestore()) throw new RewindRefusal("rewind-unsupported", "invalid params: params.files: restoring files needs /proc descriptor paths (Linux)");
  const result: SessionRewindResult = { restored: [], removed: [], conflicts: [], unrestored: [] };
  let own: OwnCheckpoint | undefined;
  if (files) {
    // A turn number no record holds yet (a rewind killed before it was logged took one too).
    const ownTurn = view.turns.reduce((n, t) => Math.max(n, t.turn), lastTurn) + 1;
    // The rewind writes like a turn (shared-workspace.ts): what it writes is noted in other
    // sessions' recording turns, and what they write meanwhile in its own checkpoint.
    const watch = new SharedWorkspaceWatch(checkpoints.root, session.id, undefined, false, checkpoints.activity);
    own = new OwnCheckpoint(checkpoints, ownTurn, turn);
    const keep = own.capture;
    const capture: RewindCapture = (paths) => {
      for (const rel of paths) watch.willRun(path.join(checkpoints.root, rel));
      return keep(paths);
    };
    try {
      const done = await rewindFiles(checkpoints, view, turn, params.force ?? false, capture);
      Object.assign(result, { restored: done.restored, removed: done.removed, conflicts: done.conflicts, unrestored: done.unrestored });
      checkpoints.store.append([{ type: "rewind", turn, lastTurn, files, conversation, states: done.states, conflicts: done.conflicts }, ...(await own.close(watch))], true);
    } finally {
      watch.close();
    }
  } else {
    checkpoints.store.append([{ type: "rewind", turn, lastTurn, files, conversation, states: [] }], true);
  }
  if (conversation) await session.emit("session/rewound", { turn });
  // After `session/rewound`: that cut does not take the rewind's own checkpoint with it.
  if (own?.event) {
    if (own.skipped.length > 0) await session.emit("checkpoint/skipped", { turn: own.turn, paths: own.skipped, reason: "size-cap" });
    if (own.unreadable.length > 0) await session.emit("checkpoint/skipped", { turn: own.turn, paths: own.unreadable, reason: "unreadable" });
    await session.emit("checkpoint", own.event);
  }
  if (conversation || own?.event) session.sync();
  return result;
}

/** A rewind's own checkpoint (see the module comment): taken by `capture`, closed once the files are written. */
class OwnCheckpoint {
  private readonly before = new Map<string, PathState>();
  private readonly notKept = new Map<string, "size-cap" | "unreadable">();
  event: CheckpointEventData | undefined;
  skipped: string[] = [];
  unreadable: string[] = [];

  constructor(
    private readonly cp: SessionCheckpoints,
    readonly turn: number,
    private readonly rewind: number,
  ) {}

  /** Keeps the paths' current states, journaled (fsynced) before the rewind touches any of them; a store that cannot be written refuses the rewind here. */
  readonly capture: RewindCapture = async (paths) => {
    const records: JournalRecord[] = [];
    const folders = new Map<string, string | undefined>();
    const pacer = new Pacer();
    for (const rel of paths) {
      if (pacer.due()) await pacer.pace();
      const kept = this.cp.keep(rel, folders);
      this.before.set(rel, kept.state);
      if (kept.skipped) {
        this.notKept.set(rel, kept.skipped);
        records.push({ type: "skip", turn: this.turn, path: rel, rewind: this.rewind });
      } else records.push({ type: "capture", turn: this.turn, path: rel, before: kept.state, rewind: this.rewind });
    }
    this.cp.store.append(records, true);
    return new Map(this.before);
  };

  /** The turn record of what the rewind changed (nothing when it was not asked to change anything); `watch` is closed once its states are taken. */
  async close(watch: SharedWorkspaceWatch): Promise<JournalRecord[]> {
    if (this.before.size === 0) return [];
    const entries: ChangedPath[] = [];
    const folders = new Map<string, string | undefined>();
    const pacer = new Pacer();
    for (const [rel, before] of this.before) {
      if (pacer.due()) await pacer.pace();
      const after = this.cp.look(rel, folders);
      if (!sameState(before, after)) entries.push({ path: rel, before, after });
    }
    const shared = sharedField(watch.close(), entries.map((e) => e.path));
    const changed = new Set(entries.map((e) => e.path));
    const notKept = [...this.notKept].filter(([rel]) => changed.has(rel));
    this.skipped = notKept.filter(([, why]) => why === "size-cap").map(([rel]) => rel);
    this.unreadable = notKept.filter(([, why]) => why === "unreadable").map(([rel]) => rel);
    this.event = { turn: this.turn, files: entries.length, kind: "files", rewind: this.rewind };
    return [{ type: "turn", turn: this.turn, kind: "files", entries, uncovered: [], skipped: notKept.map(([rel]) => rel), rewind: this.rewind, ...(shared ? { shared } : {}) }];
  }
}
