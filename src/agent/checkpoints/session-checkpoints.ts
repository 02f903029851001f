/**
 * One session's checkpoints: its store (store.ts), the real workspace root, whether the
 * workspace is a git work tree (probed once), and the snapshot's stat cache. A turn records
 * through a `TurnRecorder` (turn-recorder.ts); `session/rewind` reads the journal (rewind.ts).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isHiddenPath } from "../../sandbox/hidden.js";
import { isInside } from "../../tools/path-inside.js";
import { isGitWorkTree, listWorkTree } from "./git-listing.js";
import { readState, safeRelative, type PathState, type StatKey } from "./path-state.js";
import type { CheckpointStore } from "./store.js";

/** What keeping a path's current content came to. */
export interface Kept {
  state: PathState;
  /** Its content could not be kept: over the size cap, or unreadable. */
  skipped?: "size-cap" | "unreadable";
}

export class SessionCheckpoints {
  /** The real workspace root: every checkpoint path is relative to it. */
  readonly root: string;
  private git: Promise<boolean> | undefined;
  /** Stat and hash of files read before, by path: unchanged files are not read again. */
  private readonly cache = new Map<string, { stat: StatKey; hash: string }>();

  constructor(
    readonly store: CheckpointStore,
    readonly workspace: string,
  ) {
    this.root = fs.realpathSync(workspace);
  }

  /** Whether the workspace is a git work tree (asked once per loaded session). */
  isGit(): Promise<boolean> {
    this.git ??= isGitWorkTree(this.workspace);
    return this.git;
  }

  /**
   * The checkpoint key of a file tool's `path` argument: relative to the real root, through
   * links inside the workspace (the tool writes where they lead); `undefined` outside it.
   */
  keyOf(requested: string): string | undefined {
    const absolute = path.resolve(this.workspace, requested);
    let real: string;
    try {
      real = fs.realpathSync(absolute);
    } catch {
      try {
        real = path.join(fs.realpathSync(path.dirname(absolute)), path.basename(absolute));
      } catch {
        real = isInside(path.resolve(this.workspace), absolute) ? path.join(this.root, path.relative(path.resolve(this.workspace), absolute)) : absolute;
      }
    }
    if (!isInside(this.root, real) || real === this.root || isHiddenPath(real, this.root)) return undefined;
    return safeRelative(path.relative(this.root, real));
  }

  /** The state of `rel` now, its content kept in the store (unless over the cap or unreadable). */
  keep(rel: string): Kept {
    const known = this.cache.get(rel);
    let read = readState(this.root, rel, known);
    if (read.state?.t === "file" && !read.bytes && !this.store.has(read.state.hash)) read = readState(this.root, rel);
    if (read.unreadable) return { state: read.state, skipped: "unreadable" };
    if (read.state?.t === "file" && read.stat) this.cache.set(rel, { stat: read.stat, hash: read.state.hash });
    if (read.state?.t === "file" && read.bytes && !this.store.put(read.state.hash, read.bytes)) return { state: read.state, skipped: "size-cap" };
    return { state: read.state };
  }

  /** The state of `rel` now, its content not kept (a turn's end, a conflict check). */
  look(rel: string): PathState {
    const read = readState(this.root, rel, this.cache.get(rel));
    if (read.state?.t === "file" && read.stat) this.cache.set(rel, { stat: read.stat, hash: read.state.hash });
    return read.state;
  }

  /** The paths a git snapshot covers now, or `undefined` when git cannot list them. */
  async listed(): Promise<string[] | undefined> {
    const listed = await listWorkTree(this.workspace);
    if (!listed) return undefined;
    const out: string[] = [];
    for (const entry of listed) {
      const rel = safeRelative(entry);
      // Never copied into the store: credential stores and the session logs (a home folder as workspace holds them).
      if (rel !== undefined && !isHiddenPath(path.join(this.root, rel), this.root)) out.push(rel);
    }
    return out;
  }
}
