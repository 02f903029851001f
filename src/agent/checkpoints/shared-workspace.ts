/**
 * Which of a turn's changes may be another session's: the turns of this process that record a
 * checkpoint of overlapping workspaces at the same time (many sessions of one harness on one
 * repository, as the SDK's asyncio example runs them).
 *
 * A checkpoint records what changed in its workspace between its snapshot and the turn's end,
 * whoever changed it (a `git` kind), and a file's state at the turn's end as "what the session
 * last wrote" (both kinds). A file another session wrote in that window is then undone by a
 * rewind of this turn, as if this turn had written it: another session's work, removed without
 * a conflict. So while a turn records, every changing tool another session runs is noted in it:
 * a file tool's path (that path's change may be the other session's), any other changing tool
 * (`bash`, `task`, a client or MCP tool: it may change anything, and so may a file tool whose
 * folder does not exist yet) the whole turn. A rewind that writes files is watched the same way,
 * for its own checkpoint. What is noted is journaled with the turn (`shared`), and a rewind of a
 * turn that noted a path leaves it as a conflict unless `force`, whichever turn wrote it last
 * (rewind.ts `rewindFiles`).
 *
 * Invariant: over-noting is safe (a conflict the user can force), under-noting loses work; so a
 * turn that starts recording while another session's opaque tool may still run is noted whole.
 * A watch lives from a turn's first changing tool to its end, or to its throw (turn-runner.ts
 * lets it go). A subagent's turn run by its parent's `task` call is one family with the parent:
 * the parent's checkpoint covers what its `task` calls do by design; a child session the client
 * prompts itself is another session.
 *
 * Other bridge processes on the same machine and session root (a second bridge on the same
 * repository) are seen through the session root's activity folder (process-activity.ts): a
 * watch with an `activity` announces its start, each changing tool and its end there, and at
 * its close notes, with the same `noteWrites`, every other process's watch that may have
 * overlapped it. In-process watches are still noted here, from memory, as they happen; the
 * other processes' only at the close (their lines are read then: a line is written before its
 * tool runs, and the close reads after the turn's end walk). Processes on other session roots,
 * or without a session log, are not seen: docs/checkpoints.md.
 *
 * @module
 */
import * as path from "node:path";
import { isInside } from "../../tools/path-inside.js";
import { stampNow, type Stamp } from "./activity-lines.js";
import type { ProcessActivity } from "./process-activity.js";

/** What a turn's watch noted: every path (`all`), or these paths, relative to its workspace. */
export interface SharedChanges {
  all: boolean;
  paths: Set<string>;
}

interface Watch {
  readonly sessionId: string;
  readonly family: string;
  readonly root: string;
  /** Its session's permission mode is `full`: its opaque tools may write outside its workspace too. */
  readonly full: boolean;
  /** This turn ran a changing tool other than a file tool (it may still run). */
  opaque: boolean;
  /** Paths (absolute) this turn's file tools wrote. */
  readonly wrote: Set<string>;
  readonly noted: SharedChanges;
  /** Its announcement to other processes ends (a replaced watch's too: it would stay open in their eyes). */
  readonly release: () => void;
}

/** The watches of the turns recording now, in this process. */
const active = new Set<Watch>();

/** Whether two workspaces overlap (one holds the other): a write in one may be a change in the other. */
const overlap = (a: string, b: string) => isInside(a, b) || isInside(b, a);

/** Notes in `into` what `from` may have changed in `into`'s workspace. */
function noteWrites(into: Watch, from: { root: string; full: boolean; opaque: boolean; wrote: Iterable<string> }): void {
  if (from.opaque && (from.full || overlap(into.root, from.root))) into.noted.all = true;
  for (const abs of from.wrote) if (isInside(into.root, abs)) into.noted.paths.add(path.relative(into.root, abs));
}

/** The family of a turn of `sessionId` (child of `parentSessionId`): its parent's, when the parent is recording. */
function familyOf(sessionId: string, parentSessionId: string | undefined): string {
  if (parentSessionId === undefined) return sessionId;
  for (const w of active) if (w.sessionId === parentSessionId) return w.family;
  return parentSessionId;
}

/**
 * The `shared` field of a turn record whose entries change `paths`, from what its watch noted:
 * `true` (every entry), the noted paths among them, or `undefined` (none).
 */
export function sharedField(noted: SharedChanges | undefined, paths: string[]): true | string[] | undefined {
  if (!noted || paths.length === 0) return undefined;
  if (noted.all) return true;
  const shared = paths.filter((p) => noted.paths.has(p));
  return shared.length > 0 ? shared : undefined;
}

/**
 * One turn's watch over its workspace (`root`, a real path), from its first changing tool to its
 * end. `activity`: where it meets other processes (process-activity.ts); none without a session log.
 */
export class SharedWorkspaceWatch {
  private readonly watch: Watch;
  private closed = false;
  /** Its start, taken before the turn's snapshot: the window other processes' watches are looked for in. */
  private readonly start: Stamp | undefined;
  private readonly id: number | undefined;

  constructor(
    root: string,
    sessionId: string,
    parentSessionId: string | undefined,
    full: boolean,
    private readonly activity?: ProcessActivity,
  ) {
    // A watch this session left (a turn that threw before its end) is replaced: one turn a session at a time.
    for (const w of active)
      if (w.sessionId === sessionId) {
        active.delete(w);
        w.release();
      }
    if (activity) {
      this.start = stampNow();
      this.id = activity.begin(root, full, this.start);
    }
    const release = () => this.id !== undefined && this.activity?.end(this.id, stampNow());
    this.watch = { sessionId, family: familyOf(sessionId, parentSessionId), root, full, opaque: false, wrote: new Set(), noted: { all: false, paths: new Set() }, release };
    // What other sessions' turns wrote or may still write: their opaque tools may be running now.
    for (const other of active) if (other.family !== this.watch.family) noteWrites(this.watch, other);
    active.add(this.watch);
  }

  /**
   * This turn is about to run a changing tool: a file tool writing `abs` (an absolute path), or
   * (`abs` undefined) one that may change anything. Noted in every other family's turn.
   */
  willRun(abs: string | undefined): void {
    if (this.closed) return;
    const w = this.watch;
    if (abs === undefined) w.opaque = true;
    else w.wrote.add(abs);
    const from = { root: w.root, full: w.full, opaque: abs === undefined, wrote: abs === undefined ? [] : [abs] };
    for (const other of active) if (other !== w && other.family !== w.family) noteWrites(other, from);
    if (this.id !== undefined) this.activity?.willRun(this.id, abs);
  }

  /**
   * The turn's end: what was noted in it, other processes' watches that overlapped it included;
   * the watch is released (idempotent). Called after the turn's end walk: a write another process
   * announced before that walk could see it is in the file read here.
   */
  close(): SharedChanges {
    if (!this.closed) {
      this.closed = true;
      active.delete(this.watch);
      if (this.activity && this.id !== undefined && this.start) {
        const end = stampNow();
        this.activity.end(this.id, end);
        for (const from of this.activity.during(this.start, end)) noteWrites(this.watch, from);
      }
    }
    return this.watch.noted;
  }
}

