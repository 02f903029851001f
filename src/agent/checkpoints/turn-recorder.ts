/**
 * What one turn records so that a rewind can undo it. Before the turn's first tool that may
 * change the workspace runs: in a git work tree, a snapshot (every listed file's state, its
 * content kept in the store — or, for a tracked file whose bytes are the blob its index entry
 * records, a reference to that blob: git-objects.ts). Before each `write_file` / `edit_file`:
 * the previous state of the file it names, journaled before the tool writes (a bridge killed
 * mid-turn still knows it).
 * At the turn's end: the state of every path that changed ("what the session last wrote"),
 * one journal record, and the `checkpoint` event (`checkpoint/skipped` first when contents
 * were not kept).
 *
 * Kind `git` covers whatever the turn's tools did to listed files (bash included); kind `files`
 * covers the file tools only, and names the other writing tools that ran as `uncovered`.
 *
 * @module
 */
import type { JsonObject, PermissionMode } from "../../protocol/index.js";
import type { Logger } from "../../log.js";
import type { Session } from "../session.js";
import * as path from "node:path";
import { Pacer, sameState, type PathState } from "./path-state.js";
import { landing, type SessionCheckpoints } from "./session-checkpoints.js";
import { SharedWorkspaceWatch, sharedField } from "./shared-workspace.js";
import type { ChangedPath } from "./store.js";

/** The tools whose `path` argument names the one file they write. */
const FILE_TOOLS: ReadonlySet<string> = new Set(["write_file", "edit_file"]);


export class TurnRecorder {
  private changing = false;
  /** The snapshot before the first change (git kind): path → state. */
  private snapshot: Map<string, PathState> | undefined;
  /**
   * The snapshot's paths in listing order: the turn's end walks them by index, where iterating
   * the map would make an entry array and an iterator result for each of the tree's files.
   */
  private snapshotPaths: string[] = [];
  /** Previous states kept before file tools wrote (path → state). */
  private readonly captured = new Map<string, PathState>();
  private readonly skipped = new Map<string, "size-cap" | "unreadable">();
  private readonly uncovered = new Set<string>();
  /** Stamps of the paths whose names are not UTF-8, at the snapshot (SessionCheckpoints.unnamedStamps). */
  private unnamedBefore = new Map<string, { name: string; stamp: string }>();
  /** Other sessions' changing tools while this turn records (shared-workspace.ts); none without an owner. */
  private watch: SharedWorkspaceWatch | undefined;

  constructor(
    private readonly checkpoints: SessionCheckpoints,
    private readonly turn: number,
    /** The session's permission mode: in `full` the file tools may write outside the workspace. */
    private readonly mode: PermissionMode = "workspace-write",
    /** Where a turn left without its record says so (docs/PROTOCOL.md: "a warning on stderr"). */
    private readonly logger?: Logger,
    /** The session recording: its turn is watched for other sessions' writes to its workspace. */
    private readonly owner?: { sessionId: string; parentSessionId?: string },
  ) {}

  /**
   * Called before a tool call runs; `readOnly` tools change nothing and record nothing. Never
   * throws: a checkpoint that cannot be taken (a full disk) does not stop the tool, and the
   * tool is named as not covered.
   */
  async beforeTool(name: string, readOnly: boolean, args: JsonObject): Promise<void> {
    if (readOnly) return;
    const cp = this.checkpoints;
    if (!this.changing && this.owner) this.watch = new SharedWorkspaceWatch(cp.root, this.owner.sessionId, this.owner.parentSessionId, this.mode === "full", cp.activity);
    try {
      await this.record(name, args);
    } catch {
      this.uncovered.add(name);
    } finally {
      // Announced whatever the recording did: the tool runs either way. A file tool whose folder
      // does not exist yet is announced as one that may change anything: it makes the folder,
      // and a link on the way may send the write anywhere.
      this.watch?.willRun(FILE_TOOLS.has(name) && typeof args.path === "string" ? landing(path.resolve(cp.workspace, args.path)) : undefined);
    }
  }

  /** The turn threw before `finish`: its watch is let go (the turn records nothing more). */
  abandon(): void {
    this.watch?.close();
  }

  private async record(name: string, args: JsonObject): Promise<void> {
    const cp = this.checkpoints;
    if (!this.changing) {
      this.changing = true;
      if (await cp.isGit()) this.snapshot = await this.takeSnapshot();
    }
    if (FILE_TOOLS.has(name) && typeof args.path === "string") {
      const rel = cp.keyOf(args.path);
      // Outside the workspace or hidden: a confined tool refuses it; in `full` mode it writes
      // where no rewind may, and the turn says so.
      if (rel === undefined) {
        if (this.mode === "full") this.uncovered.add(name);
        return;
      }
      if (this.captured.has(rel) || this.snapshot?.has(rel)) return;
      const kept = cp.keep(rel);
      this.captured.set(rel, kept.state);
      if (kept.skipped) {
        this.skipped.set(rel, kept.skipped);
        cp.store.append([{ type: "skip", turn: this.turn, path: rel }]);
      } else cp.store.append([{ type: "capture", turn: this.turn, path: rel, before: kept.state }]);
    } else if (!this.snapshot) {
      this.uncovered.add(name);
    }
  }

  private async takeSnapshot(): Promise<Map<string, PathState> | undefined> {
    const cp = this.checkpoints;
    const reference = await cp.canReference();
    const listed = await cp.listed(reference);
    if (!listed) return undefined;
    this.unnamedBefore = await cp.unnamedStamps();
    const snapshot = new Map<string, PathState>();
    const folders = new Map<string, string | undefined>();
    const keep = (rel: string, ref: boolean) => {
      const kept = cp.keep(rel, folders, ref);
      snapshot.set(rel, kept.state);
      if (kept.skipped) this.skipped.set(rel, kept.skipped);
    };
    const pacer = new Pacer();
    const paths: string[] = [];
    this.snapshotPaths = paths;
    for (const rel of listed) {
      // Once each, whatever the listing holds (two entries may name one path once normalized).
      if (!snapshot.has(rel)) paths.push(rel);
      keep(rel, reference);
      if (pacer.due()) await pacer.pace();
    }
    // A blob the index names but the repository does not hold (a crafted or damaged index, an
    // intent-to-add entry): that file is copied after all.
    if (reference)
      for (const rel of await cp.unconfirmed(snapshot)) {
        keep(rel, false);
        if (pacer.due()) await pacer.pace();
      }
    return snapshot;
  }

  /**
   * The turn is over: records what changed and emits `checkpoint` (nothing when no tool could
   * change the workspace). A journal that cannot be written leaves the turn without a record
   * (and without the event), and the log says so: a rewind then finds nothing of it to undo.
   */
  async finish(session: Session): Promise<void> {
    if (!this.changing) return;
    let event: { turn: number; files: number; kind: "files" | "git"; uncovered?: string[] };
    let skippedEvents: Array<{ turn: number; paths: string[]; reason: "size-cap" | "unreadable" }>;
    try {
      ({ event, skippedEvents } = await this.close());
    } catch (error) {
      this.logger?.warn(`session ${session.id}, turn ${this.turn}: the turn's checkpoint could not be recorded, so no rewind can undo this turn: ${(error as Error).message}`);
      return;
    } finally {
      this.watch?.close();
    }
    for (const data of skippedEvents) await session.emit("checkpoint/skipped", data);
    await session.emit("checkpoint", event);
  }

  private async close() {
    const cp = this.checkpoints;
    const entries: ChangedPath[] = [];
    /** Paths looked at that the snapshot does not hold (its own are looked at once, in its walk). */
    const seen = new Set<string>();
    const folders = new Map<string, string | undefined>();
    const pacer = new Pacer();
    const look = (rel: string, before: PathState) => {
      const after = cp.look(rel, folders);
      if (!sameState(before, after)) entries.push({ path: rel, before, after });
    };
    const add = (rel: string, before: PathState) => {
      if (seen.has(rel)) return;
      seen.add(rel);
      look(rel, before);
    };
    // Paths whose names are not UTF-8 are never kept: one the turn changed is reported as not kept ("unreadable").
    const unnamedChanged = new Set<string>();
    if (this.snapshot) {
      const snapshot = this.snapshot;
      const paths = this.snapshotPaths;
      // The listing of now runs (git, in its own process) while the snapshot's paths are looked
      // at; those listed now that the snapshot does not hold are looked at once it is in. Never
      // rejected unhandled: listing fails as `undefined`, and the walk below does not throw.
      const listing = cp.listed();
      listing.catch(() => undefined);
      for (let i = 0; i < paths.length; i++) {
        const rel = paths[i]!;
        look(rel, snapshot.get(rel) ?? null);
        if (pacer.due()) await pacer.pace();
      }
      for (const rel of (await listing) ?? []) {
        if (snapshot.has(rel)) continue;
        add(rel, null);
        if (pacer.due()) await pacer.pace();
      }
      const unnamedNow = await cp.unnamedStamps();
      for (const [key, { name }] of [...this.unnamedBefore, ...unnamedNow]) {
        if ((this.unnamedBefore.get(key)?.stamp ?? "absent") !== (unnamedNow.get(key)?.stamp ?? "absent")) unnamedChanged.add(name);
      }
    }
    for (const [rel, before] of this.captured) {
      if (this.snapshot?.has(rel)) continue;
      add(rel, before);
      if (pacer.due()) await pacer.pace();
    }
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const kind: "files" | "git" = this.snapshot ? "git" : "files";
    // A skipped path that did not change needs no content: only changed ones are reported.
    const changed = new Set(entries.map((e) => e.path));
    const skipped = [...this.skipped].filter(([rel]) => changed.has(rel));
    for (const name of [...unnamedChanged].sort()) if (!changed.has(name)) skipped.push([name, "unreadable"]);
    const uncovered = [...this.uncovered];
    // Closed after the walk: another session's write during it is noted too.
    const shared = sharedField(this.watch?.close(), entries.map((e) => e.path));
    cp.store.append([{ type: "turn", turn: this.turn, kind, entries, uncovered, skipped: skipped.map(([rel]) => rel), ...(shared ? { shared } : {}) }], true);
    const skippedEvents = (["size-cap", "unreadable"] as const)
      .map((reason) => ({ turn: this.turn, paths: skipped.filter(([, why]) => why === reason).map(([rel]) => rel), reason }))
      .filter((e) => e.paths.length > 0);
    const event = { turn: this.turn, files: entries.length + unnamedChanged.size, kind, ...(uncovered.length > 0 ? { uncovered } : {}) };
    return { event, skippedEvents };
  }
}
