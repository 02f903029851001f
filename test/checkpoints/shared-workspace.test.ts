/**
 * Sessions of one process recording turns on one workspace at once (shared-workspace.ts): a
 * rewind of one session's turn must never undo another session's work without a word. What
 * another session's tools may have changed during the turn is a conflict for the rewind (left
 * alone unless `force`); what the turn's own session wrote alone is undone as before; a
 * subagent's writes are its parent's.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJournal, rewindFiles } from "../../src/agent/checkpoints/rewind.js";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { parseActivity, stampNow, watchLine } from "../../src/agent/checkpoints/activity-lines.js";
import { ProcessActivity } from "../../src/agent/checkpoints/process-activity.js";
import { SharedWorkspaceWatch } from "../../src/agent/checkpoints/shared-workspace.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import type { Session } from "../../src/agent/session.js";
import { SELF } from "../../src/agent/store/process-owner.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll } from "./rewind-support.js";

let ws: TempWorkspace | undefined;
let root: string | undefined;
const open: SharedWorkspaceWatch[] = [];
afterEach(() => {
  for (const w of open.splice(0)) w.close();
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  ws = root = undefined;
});

const watch = (dir: string, sessionId: string, parent?: string, full = false) => {
  const w = new SharedWorkspaceWatch(dir, sessionId, parent, full);
  open.push(w);
  return w;
};

describe("what a turn's watch notes", () => {
  it("another session's file tool: that path; its other changing tools: everything", () => {
    const a = watch("/ws", "a");
    const b = watch("/ws", "b");
    b.willRun("/ws/src/b.txt");
    expect(a.close()).toEqual({ all: false, paths: new Set(["src/b.txt"]) });
    const c = watch("/ws", "c");
    b.willRun(undefined); // bash
    expect(c.close().all).toBe(true);
    expect(b.close()).toEqual({ all: false, paths: new Set() });
  });

  it("a turn that starts while another session's opaque tool may run is noted whole", () => {
    const a = watch("/ws", "a");
    a.willRun(undefined);
    expect(watch("/ws", "b").close().all).toBe(true);
    // And a file another session wrote before: noted (it may be mid-write), never missed.
    const c = watch("/other", "c");
    c.willRun("/other/x.txt");
    expect(watch("/other", "d").close().paths).toEqual(new Set(["x.txt"]));
  });

  it("a session's subagents are one family with it, in both directions", () => {
    const parent = watch("/ws", "p");
    const child = watch("/ws", "p.task-1", "p");
    const grandchild = watch("/ws", "p.task-1.task-2", "p.task-1");
    parent.willRun(undefined);
    grandchild.willRun("/ws/g.txt");
    child.willRun(undefined);
    for (const w of [parent, child, grandchild]) expect(w.close()).toEqual({ all: false, paths: new Set() });
  });

  it("workspaces that overlap note each other; apart, they do not; `full` reaches everywhere", () => {
    const outer = watch("/repo", "a");
    const inner = watch("/repo/sub", "b");
    const apart = watch("/elsewhere", "c");
    inner.willRun("/repo/sub/x.txt");
    outer.willRun(undefined);
    expect(outer.close().paths).toEqual(new Set(["sub/x.txt"]));
    expect(inner.close().all).toBe(true);
    expect(apart.close()).toEqual({ all: false, paths: new Set() });
    const d = watch("/elsewhere", "d");
    watch("/repo", "e", undefined, true).willRun(undefined);
    expect(d.close().all).toBe(true);
  });

  it("a closed watch notes nothing more and announces nothing", () => {
    const a = watch("/ws", "a");
    const b = watch("/ws", "b");
    b.willRun("/ws/r.txt");
    const noted = a.close();
    b.willRun("/ws/later.txt");
    a.willRun(undefined);
    expect(noted.paths).toEqual(new Set(["r.txt"]));
    expect(b.close()).toEqual({ all: false, paths: new Set() });
  });

  it("with an activity folder, it notes another process's watch that overlapped it and announces its own (process-activity.ts)", () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-shared-activity-"));
    const folder = path.join(root, "activity");
    // Another process, as its file says: a watch on /ws/sub open since before this turn, that wrote x.txt.
    fs.mkdirSync(folder);
    const other = stampNow();
    fs.writeFileSync(path.join(folder, "other.activity"), `${JSON.stringify(SELF)}\n${watchLine(1, other, { root: "/ws/sub", full: false })}${watchLine(1, other, { path: "/ws/sub/x.txt" })}`);
    const a = new SharedWorkspaceWatch("/ws", "a", undefined, false, new ProcessActivity(folder));
    a.willRun("/ws/mine.txt");
    expect(a.close()).toEqual({ all: false, paths: new Set(["sub/x.txt"]) });
    const mine = fs.readdirSync(folder).find((n) => n !== "other.activity")!;
    const announced = parseActivity(fs.readFileSync(path.join(folder, mine), "utf8")).watches.get(1);
    expect(announced).toMatchObject({ root: "/ws", paths: ["/ws/mine.txt"], all: false });
    expect(announced?.end).toBeDefined();
  });
});

describe("a rewind of one of two sessions' turns that overlapped", () => {
  function sessionOn(dir: string, id: string): SessionCheckpoints {
    root ??= fs.mkdtempSync(path.join(os.tmpdir(), "hb-shared-root-"));
    return new SessionCheckpoints(new CheckpointStore(root, id), dir);
  }
  const session = (id: string) => ({ id, emit: async () => undefined }) as unknown as Session;

  /**
   * A's turn writes `aPath` with `write_file`; inside it, B's turn runs `bTool` on `bPath` and
   * writes `bFile` (with `bContent`), then ends; then A's turn ends. A's rewind to turn 1.
   */
  async function bInsideA(aPath: string, bTool: string, bPath: string, bFile: string, bContent: string) {
    const a = sessionOn(ws!.dir, "a");
    const b = sessionOn(ws!.dir, "b");
    const recA = new TurnRecorder(a, 1, "workspace-write", undefined, { sessionId: "a" });
    await recA.beforeTool("write_file", false, { path: aPath });
    ws!.file(aPath, "a's file\n");
    const recB = new TurnRecorder(b, 1, "workspace-write", undefined, { sessionId: "b" });
    await recB.beforeTool(bTool, false, { path: bPath });
    ws!.file(bFile, bContent);
    await recB.finish(session("b"));
    await recA.finish(session("a"));
    return rewindFiles(a, readJournal(a.store.journal()), 1, false);
  }

  for (const git of [true, false]) {
    it(`undoes its own file and leaves the other session's as a conflict (${git ? "git" : "files"} kind)`, async () => {
      ws = tempWorkspace("hb-shared-ws-");
      ws.file("README.md", "readme\n");
      if (git) commitAll(ws.dir);
      const a = sessionOn(ws.dir, "a");
      const b = sessionOn(ws.dir, "b");
      const recA = new TurnRecorder(a, 1, "workspace-write", undefined, { sessionId: "a" });
      const recB = new TurnRecorder(b, 1, "workspace-write", undefined, { sessionId: "b" });
      // A's turn starts recording; B's turn writes B_work.txt and ends; then A writes A.txt.
      await recA.beforeTool("write_file", false, { path: "A.txt" });
      await recB.beforeTool("write_file", false, { path: "B_work.txt" });
      ws.file("B_work.txt", "b's work\n");
      await recB.finish(session("b"));
      ws.file("A.txt", "a's file\n");
      await recA.finish(session("a"));
      const done = await rewindFiles(a, readJournal(a.store.journal()), 1, false);
      expect(done.removed).toEqual(["A.txt"]);
      // A files-kind turn names only the files its own tools wrote: B_work.txt is not A's to undo.
      expect(done.conflicts).toEqual(git ? ["B_work.txt"] : []);
      expect(fs.readFileSync(path.join(ws.dir, "B_work.txt"), "utf8")).toBe("b's work\n");
      // B's own rewind undoes B's file: nobody else wrote while B recorded but A's announced A.txt.
      const undoB = await rewindFiles(b, readJournal(b.store.journal()), 1, false);
      expect(undoB.removed).toEqual(["B_work.txt"]);
    });
  }

  it("a file both sessions wrote during A's turn is a conflict for A's rewind, not B's work undone (files kind)", async () => {
    ws = tempWorkspace("hb-shared-ws-");
    const done = await bInsideA("notes.txt", "edit_file", "notes.txt", "notes.txt", "a's file\nb's line\n");
    expect([done.removed, done.conflicts]).toEqual([[], ["notes.txt"]]);
    expect(fs.readFileSync(path.join(ws.dir, "notes.txt"), "utf8")).toBe("a's file\nb's line\n");
  });

  it("a later turn of the session writing a path another session changed does not make it the session's to undo", async () => {
    ws = tempWorkspace("hb-shared-ws-");
    ws.file("README.md", "readme\n");
    commitAll(ws.dir);
    const a = sessionOn(ws.dir, "a");
    const turn1 = new TurnRecorder(a, 1, "workspace-write", undefined, { sessionId: "a" });
    await turn1.beforeTool("write_file", false, { path: "A.txt" });
    ws.file("A.txt", "a\n");
    const other = watch(fs.realpathSync(ws.dir), "b");
    other.willRun(path.join(fs.realpathSync(ws.dir), "b.txt"));
    ws.file("b.txt", "b\n");
    other.close();
    await turn1.finish(session("a"));
    // Turn 2, alone: a formatter over the tree touches b.txt too.
    const turn2 = new TurnRecorder(a, 2, "workspace-write", undefined, { sessionId: "a" });
    await turn2.beforeTool("edit_file", false, { path: "b.txt" });
    ws.file("b.txt", "b, formatted\n");
    await turn2.finish(session("a"));
    const done = await rewindFiles(a, readJournal(a.store.journal()), 1, false);
    expect([done.removed, done.conflicts]).toEqual([["A.txt"], ["b.txt"]]);
    expect(fs.readFileSync(path.join(ws.dir, "b.txt"), "utf8")).toBe("b, formatted\n");
  });

  it("another session's write into a folder it makes through a link is taken as anything (the link may lead anywhere)", async () => {
    ws = tempWorkspace("hb-shared-ws-");
    ws.file("real/keep.txt", "k\n");
    fs.symlinkSync("real", path.join(ws.dir, "lnk"));
    commitAll(ws.dir);
    const done = await bInsideA("A.txt", "write_file", "lnk/new/x.txt", "real/new/x.txt", "b\n");
    expect([done.removed, done.conflicts]).toEqual([[], ["A.txt", "real/new/x.txt"]]);
  });

  it("a turn that threw lets go of its watch: the other sessions' later turns are not marked by it", async () => {
    ws = tempWorkspace("hb-shared-ws-");
    ws.file("README.md", "readme\n");
    commitAll(ws.dir);
    const x = sessionOn(ws.dir, "x");
    const thrown = new TurnRecorder(x, 1, "workspace-write", undefined, { sessionId: "x" });
    await thrown.beforeTool("bash", false, {});
    thrown.abandon(); // the turn threw before `finish` (turn-runner.ts)
    const y = sessionOn(ws.dir, "y");
    const recY = new TurnRecorder(y, 1, "workspace-write", undefined, { sessionId: "y" });
    await recY.beforeTool("write_file", false, { path: "y.txt" });
    ws.file("y.txt", "y\n");
    await recY.finish(session("y"));
    expect((await rewindFiles(y, readJournal(y.store.journal()), 1, false)).removed).toEqual(["y.txt"]);
  });

  it("a turn that overlapped another session's bash leaves every path a conflict, undone with force", async () => {
    ws = tempWorkspace("hb-shared-ws-");
    ws.file("README.md", "readme\n");
    commitAll(ws.dir);
    const a = sessionOn(ws.dir, "a");
    const recA = new TurnRecorder(a, 1, "workspace-write", undefined, { sessionId: "a" });
    const other = watch(fs.realpathSync(ws.dir), "b");
    await recA.beforeTool("write_file", false, { path: "A.txt" });
    other.willRun(undefined);
    ws.file("A.txt", "a\n");
    ws.file("maybe-b.txt", "?\n");
    await recA.finish(session("a"));
    const view = readJournal(a.store.journal());
    expect((await rewindFiles(a, view, 1, false)).conflicts).toEqual(["A.txt", "maybe-b.txt"]);
    expect((await rewindFiles(a, view, 1, true)).removed).toEqual(["A.txt", "maybe-b.txt"]);
  });
});
