/**
 * A file whose stat did not change is answered from the last pass (path-state.ts `KnownFile`),
 * without its bytes: whether its state may name a blob then rests on the blob id computed from
 * those bytes before (`blobOf`) matching what the index records now. The index can change under
 * an unchanged file (`git update-index`, `git rm --cached`, a checkout of another index): the
 * state must follow the index as it is at this snapshot's listing, never name a blob that is not
 * the file's content, and a content no longer referenced must be copied into the store.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll, git } from "./rewind-support.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

describe("an unchanged file under a changed index entry", () => {
  it("names the blob the index records only while that blob is its content, and is copied otherwise", async () => {
    ws = tempWorkspace("hb-index-");
    ws.file("a.txt", "alpha\n");
    ws.file("b.txt", "bravo\n");
    commitAll(ws.dir);
    root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-index-root-"));
    const cp = new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
    const blobA = git(ws.dir, "rev-parse", "HEAD:a.txt").trim();
    const blobB = git(ws.dir, "rev-parse", "HEAD:b.txt").trim();
    const snapshot = async () => {
      await cp.listed(true);
      return cp.keep("a.txt", new Map(), true).state as { t: string; hash: string; git?: string };
    };
    const stat = fs.statSync(path.join(ws.dir, "a.txt"));

    const first = await snapshot();
    expect(first.git).toBe(blobA);
    expect(cp.store.has(first.hash)).toBe(false);

    // The index now records another blob of the repository (b.txt's) for a.txt; a.txt is untouched.
    git(ws.dir, "update-index", "--cacheinfo", `100644,${blobB},a.txt`);
    const other = await snapshot();
    expect(other.hash).toBe(first.hash);
    expect(other.git).toBeUndefined();
    expect(cp.store.has(other.hash)).toBe(true);

    // Back to a.txt's own blob: referenced again.
    git(ws.dir, "update-index", "--cacheinfo", `100644,${blobA},a.txt`);
    expect((await snapshot()).git).toBe(blobA);

    // No longer tracked: no reference.
    git(ws.dir, "rm", "-q", "--cached", "a.txt");
    const untracked = await snapshot();
    expect(untracked.git).toBeUndefined();
    expect(untracked.hash).toBe(first.hash);
    // Only the index changed: the file kept its stat throughout, so its stat key matched each time.
    expect(fs.statSync(path.join(ws.dir, "a.txt"))).toMatchObject({ ino: stat.ino, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs });
  });
});
