/**
 * A checkpoint pass over many paths gives the event loop a turn now and then (path-state.ts
 * `Pacer`): the workspace decides how many paths there are and how long each takes to read
 * (ten thousand 60 MB sparse files are one `truncate` away for the model), and a pass that never
 * yields holds the whole bridge — no request read, no `session/cancel`, no other session.
 *
 * In process, with each path's read made slower than a pacing slice: a callback queued when
 * the pass starts (`setImmediate`, as I/O is served) must run while the pass is still going —
 * not only after it, as it did when the passes ran as one synchronous loop.
 */
import * as fs from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJournal, rewindFiles } from "../../src/agent/checkpoints/rewind.js";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll, slowerThanASlice } from "./rewind-support.js";

const PATHS = 6;
let ws: TempWorkspace;
let root: string;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

/** The journal of a turn that wrote every path with `write_file`, each changed since: what a rewind to it undoes. */
async function writtenTurn(cp: SessionCheckpoints): Promise<ReturnType<typeof readJournal>> {
  const recorder = new TurnRecorder(cp, 1);
  for (let i = 0; i < PATHS; i++) await recorder.beforeTool("write_file", false, { path: `f${i}.txt` });
  for (let i = 0; i < PATHS; i++) ws.file(`f${i}.txt`, `changed ${i}\n`);
  await (recorder as unknown as { close(): Promise<unknown> }).close();
  return readJournal(cp.store.journal());
}

/** Checkpoints whose every `look`/`keep` takes longer than a pacing slice; counts the calls. */
function slowCheckpoints(gitRepo: boolean): { cp: SessionCheckpoints; calls: () => number } {
  ws = tempWorkspace("hb-pacing-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-pacing-root-"));
  for (let i = 0; i < PATHS; i++) ws.file(`f${i}.txt`, `file ${i}\n`);
  if (gitRepo) {
    commitAll(ws.dir);
  }
  const cp = new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
  let calls = 0;
  // A read that takes a slice and a bit (a big file): only the pacing's yield lets I/O in.
  const slow = <T extends (...args: any[]) => any>(fn: T): T => slowerThanASlice(fn, () => calls++);
  cp.look = slow(cp.look.bind(cp));
  cp.keep = slow(cp.keep.bind(cp));
  return { cp, calls: () => calls };
}

/** Runs `pass` and returns how many slow calls had happened when a callback queued at its start ran. */
async function callsWhenIoRan(pass: () => Promise<unknown>, calls: () => number): Promise<{ at: number; total: number }> {
  let at = -1;
  const start = calls();
  setImmediate(() => (at = calls() - start));
  await pass();
  return { at, total: calls() - start };
}

describe("checkpoint passes yield to the event loop", () => {
  it("a git snapshot and a turn's end", async () => {
    const { cp, calls } = slowCheckpoints(true);
    const recorder = new TurnRecorder(cp, 1);
    // A pass starts with `listed` (git: real I/O), so the callback is queued once it is done.
    const listed = cp.listed.bind(cp);
    // How many slow calls had happened when I/O got a turn (absent: it never did during the pass).
    const during: { at?: number } = {};
    cp.listed = async (stage?: boolean) => {
      const out = await listed(stage);
      const start = calls();
      setImmediate(() => (during.at = calls() - start));
      return out;
    };
    await recorder.beforeTool("bash", false, {});
    expect(during.at).toBeGreaterThanOrEqual(1);
    expect(during.at).toBeLessThan(PATHS);
    for (let i = 0; i < PATHS; i++) ws.file(`f${i}.txt`, `changed ${i}\n`);
    // The turn's end lists again (the patched `listed` queues the callback), then looks at each path.
    delete during.at;
    await (recorder as unknown as { close(): Promise<unknown> }).close();
    expect(during.at).toBeGreaterThanOrEqual(1);
    expect(during.at).toBeLessThan(PATHS);
  });

  it("a rewind's look, capture and close", async () => {
    const { cp, calls } = slowCheckpoints(false);
    const view = await writtenTurn(cp);
    const capture = async (paths: string[]) => new Map(paths.map((rel) => [rel, cp.keep(rel).state] as const));
    const { at, total } = await callsWhenIoRan(() => rewindFiles(cp, view, 1, false, capture), calls);
    expect(total).toBeGreaterThan(PATHS);
    expect(at).toBeGreaterThanOrEqual(1);
    expect(at).toBeLessThan(PATHS);
    expect(fs.readFileSync(path.join(ws.dir, "f0.txt"), "utf8")).toBe("file 0\n");
  });

  it("a rewind's writes", async () => {
    const { cp } = slowCheckpoints(false);
    const view = await writtenTurn(cp);
    // Each path's old content is fetched from the store right before it is written back: made
    // slower than a slice, and counted from the moment the capture hands the paths over.
    let gets = 0;
    cp.store.get = slowerThanASlice(cp.store.get.bind(cp.store), () => gets++);
    // How many had been fetched at each turn I/O got, from the capture on.
    const seen: number[] = [];
    let done = false;
    const served = () => {
      seen.push(gets);
      if (!done) setImmediate(served);
    };
    const capture = async (paths: string[]) => {
      const kept = new Map(paths.map((rel) => [rel, cp.keep(rel).state] as const));
      gets = 0;
      setImmediate(served);
      return kept;
    };
    const out = await rewindFiles(cp, view, 1, false, capture);
    done = true;
    expect(out.restored).toHaveLength(PATHS);
    expect(gets).toBe(PATHS);
    // I/O got a turn between the writes, never more than a slow fetch or two apart (a loop that
    // does not pace gives it its first turn only after the last write).
    expect(seen.some((n) => n > 0 && n < PATHS)).toBe(true);
    for (let i = 1; i < seen.length; i++) expect(seen[i] - seen[i - 1]).toBeLessThanOrEqual(2);
    expect(fs.readFileSync(path.join(ws.dir, `f${PATHS - 1}.txt`), "utf8")).toBe(`file ${PATHS - 1}\n`);
  });

  it("a change a yield of the write loop lets in is a conflict, not overwritten", async () => {
    const { cp } = slowCheckpoints(false);
    const view = await writtenTurn(cp);
    const last = `f${PATHS - 1}.txt`;
    // Each fetch of an old content takes longer than a slice, so the loop yields between writes.
    let gets = 0;
    cp.store.get = slowerThanASlice(cp.store.get.bind(cp.store), () => gets++);
    // Someone else (another session's turn in the same workspace) writes the last path at the
    // first I/O turn after the capture, once the loop has written one path back.
    let wroteAt = -1;
    const other = () => {
      if (gets === 0) return void setImmediate(other);
      ws.file(last, "someone else\n");
      wroteAt = gets;
    };
    const capture = async (paths: string[]) => {
      const kept = new Map(paths.map((rel) => [rel, cp.keep(rel).state] as const));
      setImmediate(other);
      return kept;
    };
    const out = await rewindFiles(cp, view, 1, false, capture);
    expect(wroteAt).toBeGreaterThan(0);
    expect(wroteAt).toBeLessThan(PATHS);
    // Not in the rewind's own checkpoint (taken before it was made): overwritten, it would be lost.
    expect(fs.readFileSync(path.join(ws.dir, last), "utf8")).toBe("someone else\n");
    expect(out.conflicts).toEqual([last]);
    expect(out.restored).not.toContain(last);
    expect(out.states.map((s) => s.path)).not.toContain(last);
    expect(fs.readFileSync(path.join(ws.dir, "f0.txt"), "utf8")).toBe("file 0\n");
  });

  it("a rewind's search for contents kept as blobs of the repository", async () => {
    const { cp } = slowCheckpoints(false);
    // A turn that changed PATHS tracked files, each kept as a reference to its blob.
    const entries = Array.from({ length: PATHS }, (_, i) => ({
      path: `f${i}.txt`,
      before: { t: "file" as const, hash: `${i}`.padStart(64, "a"), mode: 0o644, size: 7, git: `${i}`.padStart(40, "b") },
      after: { t: "file" as const, hash: `${i}`.padStart(64, "c"), mode: 0o644, size: 7 },
    }));
    const view = readJournal([{ type: "turn", turn: 1, kind: "git", entries, uncovered: [], skipped: [] }]);
    // Whether the store holds each content is asked first, one path at a time (an lstat each).
    let asked = 0;
    cp.store.has = slowerThanASlice(cp.store.has.bind(cp.store), () => asked++);
    let at = -1;
    setImmediate(() => (at = asked));
    await rewindFiles(cp, view, 1, false);
    expect(asked).toBeGreaterThanOrEqual(PATHS);
    expect(at).toBeGreaterThanOrEqual(1);
    expect(at).toBeLessThan(PATHS);
  });

  it("the stamps of paths whose names are not UTF-8, at a git snapshot", async () => {
    const { cp } = slowCheckpoints(true);
    // Untracked files the model made with names that are not UTF-8: each is stamped by an lstat of its raw name.
    for (let i = 0; i < PATHS; i++) fs.writeFileSync(Buffer.concat([Buffer.from(`${ws.dir}/`), Buffer.from(`n\xff${i}.txt`, "latin1")]), "x\n");
    const cjsFs = createRequire(import.meta.url)("node:fs") as { lstatSync: typeof fs.lstatSync };
    const lstat = cjsFs.lstatSync;
    let stamped = 0;
    const slowLstat = slowerThanASlice(lstat, () => stamped++);
    cjsFs.lstatSync = ((p: fs.PathLike, o?: fs.StatSyncOptions) => (Buffer.isBuffer(p) ? slowLstat(p, o as never) : lstat(p, o as never))) as typeof fs.lstatSync;
    syncBuiltinESMExports();
    try {
      let at = -1;
      const listed = cp.listed.bind(cp);
      cp.listed = async (stage?: boolean) => {
        const out = await listed(stage);
        setImmediate(() => (at = stamped));
        return out;
      };
      await new TurnRecorder(cp, 1).beforeTool("bash", false, {});
      expect(stamped).toBe(PATHS);
      expect(at).toBeGreaterThanOrEqual(1);
      expect(at).toBeLessThan(PATHS);
    } finally {
      cjsFs.lstatSync = lstat;
      syncBuiltinESMExports();
    }
  });
});
