/**
 * A pass over a tree answers an unchanged file from what the last pass found (path-state.ts
 * `KnownFile`): the same state object, so a walk of an unchanged tree makes none anew. What must
 * hold with that: any change a stat shows (content, mode, a file swapped for another) is read
 * again, and a state that references the repository's blob is never handed out for content
 * that is no longer that blob. A file changed just before its read is not known from that read
 * (`RACY_MS`): the tests that need files known run their passes on a clock a minute ahead.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RACY_MS } from "../../src/agent/checkpoints/path-state.js";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll, git } from "./rewind-support.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  vi.useRealTimers();
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function checkpoints(): SessionCheckpoints {
  ws = tempWorkspace("hb-known-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-known-root-"));
  ws.file("a.txt", "alpha\n");
  ws.file("b.txt", "bravo\n");
  commitAll(ws.dir);
  return new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
}

/** Passes from here on read the tree's files as written a minute before (only `Date` is faked). */
function aMinuteLater(): void {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 60_000 });
}

/** A whole second, so that setting it again gives the very same `mtimeMs` (no fraction lost on the way). */
const SECOND = 1_700_000_000;

describe("files known from the last pass", () => {
  it("an unchanged file is answered with the same state; a referenced one with the same reference", async () => {
    const cp = checkpoints();
    aMinuteLater();
    await cp.listed(true);
    const first = cp.keep("a.txt", new Map(), true);
    expect(first.state).toMatchObject({ t: "file", git: git(ws.dir, "rev-parse", "HEAD:a.txt").trim() });
    expect(cp.keep("a.txt", new Map(), true).state).toBe(first.state);
    const looked = cp.look("b.txt");
    expect(cp.look("b.txt")).toBe(looked);
    // Not referenced (a `files` pass): the plain state, not the reference.
    const plain = cp.keep("a.txt", new Map(), false).state;
    expect(plain).toMatchObject({ t: "file", hash: (first.state as { hash: string }).hash });
    expect(plain).not.toHaveProperty("git");
  });

  it("a rewrite of the same size under the same mtime is read again, and loses its blob reference", async () => {
    const cp = checkpoints();
    aMinuteLater();
    await cp.listed(true);
    const file = path.join(ws.dir, "a.txt");
    fs.utimesSync(file, SECOND, SECOND);
    const before = cp.keep("a.txt", new Map(), true).state as { hash: string; git?: string };
    const inode = fs.statSync(file).ino;
    // Rewritten in place within one timestamp tick: the same inode, size and mtime; only the change time moves.
    fs.writeFileSync(file, "ALPHA\n");
    fs.utimesSync(file, SECOND, SECOND);
    expect(fs.statSync(file)).toMatchObject({ ino: inode, size: 6, mtimeMs: SECOND * 1000 });
    const after = cp.keep("a.txt", new Map(), true).state as { hash: string; git?: string; size: number };
    expect(after.hash).not.toBe(before.hash);
    expect(after.git).toBeUndefined();
    expect(after.size).toBe(6);
    expect(cp.store.has(after.hash)).toBe(true);
  });

  it("a mode change is seen, and a file swapped for another of the same size and times too", async () => {
    const cp = checkpoints();
    aMinuteLater();
    const file = path.join(ws.dir, "b.txt");
    const before = cp.look("b.txt") as { mode: number; hash: string };
    fs.chmodSync(file, 0o755);
    const chmodded = cp.look("b.txt") as { mode: number; hash: string };
    expect(chmodded.mode).toBe(0o755);
    expect(chmodded.hash).toBe(before.hash);
    expect(chmodded).not.toBe(before);
    // Another file put in its place (a new inode), same size, its times set to the old ones.
    fs.utimesSync(file, SECOND, SECOND);
    const known = cp.look("b.txt");
    const other = path.join(ws.dir, "other.tmp");
    fs.writeFileSync(other, "BRAVO\n");
    fs.chmodSync(other, 0o755);
    fs.renameSync(other, file);
    fs.utimesSync(file, SECOND, SECOND);
    expect(known).toMatchObject({ hash: before.hash });
    const swapped = cp.look("b.txt") as { hash: string };
    expect(swapped.hash).not.toBe(before.hash);
  });

  it("a file changed just before its read is read again at the next pass, until its change lies far enough back", () => {
    const cp = checkpoints();
    // Just written: a rewrite of the same size in the same clock tick would leave every stat field
    // as this read saw it (git's "racily clean" case), so the read vouches for nothing later.
    const fresh = cp.look("a.txt");
    const again = cp.look("a.txt");
    expect(again).toEqual(fresh);
    expect(again).not.toBe(fresh);
    const kept = cp.keep("a.txt").state;
    expect(cp.keep("a.txt").state).not.toBe(kept);
    // A change in the future (a clock set back, a file server's clock) is no better.
    const file = path.join(ws.dir, "b.txt");
    const future = Date.now() / 1000 + 3600;
    fs.utimesSync(file, future, future);
    const ahead = cp.look("b.txt");
    expect(cp.look("b.txt")).not.toBe(ahead);
    // Once the change lies RACY_MS before a read, that read is what the next pass answers with.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + RACY_MS + 1_000 });
    const settled = cp.look("a.txt");
    expect(settled).toEqual(fresh);
    expect(cp.look("a.txt")).toBe(settled);
  });

  it("a file whose change time is fresh is read again, whatever its modification time says", () => {
    const cp = checkpoints();
    // Its mtime set an hour back (tar, cp -p, touch -d): the change time is the write's all the
    // same, and a same-size rewrite with that mtime in the same tick would leave every field as it is.
    const file = path.join(ws.dir, "a.txt");
    const hourAgo = Date.now() / 1000 - 3600;
    fs.utimesSync(file, hourAgo, hourAgo);
    const back = cp.look("a.txt");
    expect(cp.look("a.txt")).not.toBe(back);
    // A clock set back an hour: the change time lies in its future.
    fs.utimesSync(file, hourAgo - 3600, hourAgo - 3600);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() - 3_600_000 });
    const behind = cp.look("a.txt");
    expect(cp.look("a.txt")).not.toBe(behind);
  });
});
