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
import { blobId, hasPromisor, presentBlobs } from "./git-objects.js";
import { Pacer, readState, safeRelative, type FileState, type FolderCache, type KnownFile, type PathState, type ReadPath } from "./path-state.js";
import type { ProcessActivity } from "./process-activity.js";
import type { CheckpointStore } from "./store.js";

/** What keeping a path's current content came to. */
export interface Kept {
  state: PathState;
  /** Its content could not be kept: over the size cap, or unreadable. */
  skipped?: "size-cap" | "unreadable";
}

/**
 * The real path a write to `absolute` lands on (links followed, as the file tools follow them):
 * the file's own, or its folder's with its name; `undefined` when its folder does not exist yet.
 */
export function landing(absolute: string): string | undefined {
  try {
    return fs.realpathSync(absolute);
  } catch {
    try {
      return path.join(fs.realpathSync(path.dirname(absolute)), path.basename(absolute));
    } catch {
      return undefined;
    }
  }
}

export class SessionCheckpoints {
  /** The real workspace root: every checkpoint path is relative to it. */
  readonly root: string;
  private git: Promise<boolean> | undefined;
  /** Files read before, by path: unchanged files are not read again, nor their states made again. */
  private readonly cache = new Map<string, KnownFile>();
  /** A file's state as a reference to its blob (`git`), by its plain state: made once while both hold. */
  private readonly referenced = new WeakMap<FileState, FileState>();
  /** Whether contents may be referenced as blobs of the repository (a git work tree without a promisor remote; asked once). */
  private referencing: Promise<boolean> | undefined;
  /** The blob id the index recorded for each tracked path, at the last listing. */
  private index = new Map<string, string>();
  /** The paths of the last listing whose names are not UTF-8 (git-listing.ts). */
  private unnamed: Buffer[] = [];
  /** Git blob id of a content, by its SHA-256 (computed when a file's bytes were read against an index entry). */
  private readonly blobOf = new Map<string, string>();
  /** Blob ids found in the repository (with the size expected). */
  private readonly confirmed = new Set<string>();

  constructor(
    readonly store: CheckpointStore,
    readonly workspace: string,
    /** Where its turns meet other processes' (process-activity.ts): beside the session logs; none without them. */
    readonly activity?: ProcessActivity,
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
    const workspace = path.resolve(this.workspace);
    const real = landing(absolute) ?? (isInside(workspace, absolute) ? path.join(this.root, path.relative(workspace, absolute)) : absolute);
    if (!isInside(this.root, real) || real === this.root || isHiddenPath(real, this.root)) return undefined;
    return safeRelative(path.relative(this.root, real));
  }

  /** Whether this workspace's contents may be kept as references to its repository's blobs. */
  canReference(): Promise<boolean> {
    this.referencing ??= this.isGit().then(async (git) => git && !(await hasPromisor(this.workspace)));
    return this.referencing;
  }

  /**
   * The state of `rel` now, its content kept (unless over the cap or unreadable). `folders`:
   * shared by one pass over many paths. `reference` (a git snapshot): a file whose bytes are the
   * blob the index records for it (at the last `listed()`) is not copied; its state names the
   * blob (`git`), to be confirmed present (`unconfirmed`) before the snapshot counts on it.
   */
  keep(rel: string, folders?: FolderCache, reference = false): Kept {
    const known = this.cache.get(rel);
    const indexed = reference ? this.index.get(rel) : undefined;
    let read = readState(this.root, rel, known, folders);
    if (read.state?.t === "file" && !read.bytes) {
      if (indexed !== undefined && this.blobOf.get(read.state.hash) === indexed) return { state: this.asBlob(read.state, indexed) };
      if (!this.store.has(read.state.hash)) read = readState(this.root, rel, undefined, folders);
    }
    if (read.unreadable) return { state: read.state, skipped: "unreadable" };
    this.remember(rel, read, known);
    if (read.state?.t === "file" && read.bytes) {
      if (indexed !== undefined) {
        const id = blobId(read.bytes, indexed);
        this.blobOf.set(read.state.hash, id);
        if (id === indexed) return { state: this.asBlob(read.state, id) };
      }
      if (!this.store.put(read.state.hash, read.bytes)) return { state: read.state, skipped: "size-cap" };
    }
    return { state: read.state };
  }

  /**
   * The referenced blobs of `states` that the repository does not hold (as blobs of the size
   * expected), after one `cat-file --batch-check` for those not confirmed before: their paths
   * must be kept by copy. All of them when git cannot be asked.
   */
  async unconfirmed(states: ReadonlyMap<string, PathState>): Promise<string[]> {
    const wanted = new Map<string, number>();
    // `forEach`, not `for…of`: no iterator result for each of the tree's files.
    states.forEach((state) => {
      if (state?.t === "file" && state.git !== undefined && !this.confirmed.has(state.git)) wanted.set(state.git, state.size);
    });
    // Every reference confirmed before (a later turn's snapshot, as a rule): nothing to ask.
    if (wanted.size === 0) return [];
    const present = await presentBlobs(this.workspace, wanted);
    for (const id of present ?? []) this.confirmed.add(id);
    const out: string[] = [];
    for (const [rel, state] of states) if (state?.t === "file" && state.git !== undefined && !this.confirmed.has(state.git)) out.push(rel);
    return out;
  }

  /** The state of `rel` now, its content not kept (a turn's end, a conflict check). */
  look(rel: string, folders?: FolderCache): PathState {
    const known = this.cache.get(rel);
    const read = readState(this.root, rel, known, folders);
    this.remember(rel, read, known);
    return read.state;
  }

  /** Notes a file read anew (a stat that is not `known`'s) for the next pass. */
  private remember(rel: string, read: ReadPath, known: KnownFile | undefined): void {
    if (read.state?.t === "file" && read.stat && read.stat !== known?.stat) this.cache.set(rel, { stat: read.stat, state: read.state });
  }

  /** `state` as a reference to the repository's blob `id`: one object for as long as both hold. */
  private asBlob(state: FileState, id: string): FileState {
    let out = this.referenced.get(state);
    if (out?.git !== id) {
      out = { ...state, git: id };
      this.referenced.set(state, out);
    }
    return out;
  }

  /**
   * The paths a git snapshot covers now, or `undefined` when git cannot list them. `stage`
   * (a snapshot): the blob ids the index records are noted for `keep`.
   */
  async listed(stage = false): Promise<string[] | undefined> {
    const listing = await listWorkTree(this.workspace, stage);
    if (!listing) return undefined;
    if (stage) this.index = listing.index;
    this.unnamed = listing.unnamed;
    const listed = listing.paths;
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

  /**
   * A stamp of each path of the last listing whose name is not UTF-8, by its bytes (hex): inode,
   * size, mode and the change and modification times, from an `lstat` by the raw name (no
   * string names it). Stamps that differ mean the path was changed; equal ones that it was not.
   * Paced (the workspace decides how many such names there are).
   */
  async unnamedStamps(): Promise<Map<string, { name: string; stamp: string }>> {
    const out = new Map<string, { name: string; stamp: string }>();
    const base = Buffer.from(`${this.workspace}/`);
    const pacer = new Pacer();
    for (const raw of this.unnamed) {
      if (pacer.due()) await pacer.pace();
      let stamp = "absent";
      try {
        const st = fs.lstatSync(Buffer.concat([base, raw]), { bigint: true });
        stamp = `${st.ino}:${st.size}:${st.mode}:${st.ctimeNs}:${st.mtimeNs}`;
      } catch {
        // gone since the listing
      }
      out.set(raw.toString("hex"), { name: raw.toString("utf8"), stamp });
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
