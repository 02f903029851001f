/**
 * One session's checkpoints: its store (store.ts), the real workspace root, whether the
 * workspace is a git work tree (probed once), and the snapshot's stat cache. A turn records
 * through a `TurnRecorder` (turn-recorder.ts); `session/rewind` reads the journal (rewind.ts).
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isHiddenPath, wantedHidden } from "../../sandbox/hidden.js";
import { isInside } from "../../tools/path-inside.js";
import { isGitWorkTree, listWorkTree } from "./git-listing.js";
import { readState, safeRelative, type FolderCache, type PathState, type StatKey } from "./path-state.js";
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

  /** The state of `rel` now, its content kept in the store (unless over the cap or unreadable). `folders`: shared by one pass over many paths. */
  keep(rel: string, folders?: FolderCache): Kept {
    const known = this.cache.get(rel);
    let read = readState(this.root, rel, known, folders);
    if (read.state?.t === "file" && !read.bytes && !this.store.has(read.state.hash)) read = readState(this.root, rel, undefined, folders);
    if (read.unreadable) return { state: read.state, skipped: "unreadable" };
    if (read.state?.t === "file" && read.stat) this.cache.set(rel, { stat: read.stat, hash: read.state.hash });
    if (read.state?.t === "file" && read.bytes && !this.store.put(read.state.hash, read.bytes)) return { state: read.state, skipped: "size-cap" };
    return { state: read.state };
  }

  /** The state of `rel` now, its content not kept (a turn's end, a conflict check). */
  look(rel: string, folders?: FolderCache): PathState {
    const read = readState(this.root, rel, this.cache.get(rel), folders);
    if (read.state?.t === "file" && read.stat) this.cache.set(rel, { stat: read.stat, hash: read.state.hash });
    return read.state;
  }

  /** The paths a git snapshot covers now, or `undefined` when git cannot list them. */
  async listed(): Promise<string[] | undefined> {
    const listed = await listWorkTree(this.workspace);
    if (!listed) return undefined;
    // Never copied into the store: credential stores and the session logs (a home folder as
    // workspace holds them). Checked per file only when one of them is inside the workspace.
    const hidden = hiddenInside(this.root);
    const out: string[] = [];
    for (const entry of listed) {
      const rel = safeRelative(entry);
      if (rel !== undefined && !(hidden && isHiddenPath(path.join(this.root, rel), this.root))) out.push(rel);
    }
    return out;
  }
}

/** Whether a hidden path (sandbox/hidden.ts) lies inside `root`, by name or real path. */
function hiddenInside(root: string): boolean {
  for (const p of wantedHidden(process.env)) {
    const named = path.resolve(p);
    let real = named;
    try {
      real = fs.realpathSync(p);
    } catch {
      // not there: its name still counts
    }
    if ((isInside(root, named) && named !== root) || (isInside(root, real) && real !== root)) return true;
  }
  return false;
}
