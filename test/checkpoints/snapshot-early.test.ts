/**
 * A later snapshot looks at the last listing's files by their stat while git lists the tree
 * anew (session-checkpoints.ts `stillKnown`, turn-recorder.ts `takeSnapshot`); a file found
 * still the one read before is not stat'ed again. What must hold with that: the snapshot is
 * what the tree holds when it is taken — a file changed, replaced by a link, removed or added
 * since the last listing is seen as it is now, and only the new listing decides which paths the
 * snapshot covers. The passes run on a clock a minute ahead, so the files are known
 * (path-state.ts `RACY_MS`).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import type { PathState } from "../../src/agent/checkpoints/path-state.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { git } from "./rewind-support.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  vi.useRealTimers();
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function repository(): SessionCheckpoints {
  ws = tempWorkspace("hb-early-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-early-root-"));
  for (const name of ["a.txt", "b.txt", "c.txt", "d.txt"]) ws.file(name, `${name}\n`);
  git(ws.dir, "init", "-q");
  git(ws.dir, "add", ".");
  git(ws.dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base");
  return new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
}

/** A `bash` turn that changes nothing; its snapshot (path → state). */
async function snapshotOf(cp: SessionCheckpoints, turn: number): Promise<Map<string, PathState>> {
  const recorder = new TurnRecorder(cp, turn);
  await recorder.beforeTool("bash", false, {});
  const snapshot = (recorder as unknown as { snapshot: Map<string, PathState> | undefined }).snapshot;
  await (recorder as unknown as { close(): Promise<unknown> }).close();
  if (!snapshot) throw new Error("no snapshot");
  return snapshot;
}

const hashOf = (state: PathState | undefined) => (state?.t === "file" ? state.hash : state?.t);

describe("a later snapshot, begun while git lists", () => {
  it("answers an unchanged file with the very state of the last turn", async () => {
    const cp = repository();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 60_000 });
    const first = await snapshotOf(cp, 1);
    const second = await snapshotOf(cp, 2);
    expect([...second.keys()].sort()).toEqual(["a.txt", "b.txt", "c.txt", "d.txt"]);
    for (const [rel, state] of second) expect(state, rel).toBe(first.get(rel));
  });

  it("sees what changed since the last listing: a rewrite, a link, a removal and a new file", async () => {
    const cp = repository();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 60_000 });
    const first = await snapshotOf(cp, 1);
    // The same size: only the stat's times (and the content) tell it changed.
    ws.file("a.txt", "A.txt\n");
    fs.rmSync(path.join(ws.dir, "b.txt"));
    fs.symlinkSync("d.txt", path.join(ws.dir, "b.txt"));
    fs.rmSync(path.join(ws.dir, "c.txt"));
    ws.file("e.txt", "new\n");
    vi.setSystemTime(Date.now() + 60_000);
    const second = await snapshotOf(cp, 2);
    // c.txt is still in git's index: listed, and absent.
    expect([...second.keys()].sort()).toEqual(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]);
    expect(second.get("c.txt")).toBeNull();
    expect(hashOf(second.get("a.txt"))).not.toBe(hashOf(first.get("a.txt")));
    expect(second.get("a.txt")).toMatchObject({ t: "file", size: 6 });
    expect(second.get("a.txt")).not.toHaveProperty("git"); // no longer the blob the index records
    expect(second.get("b.txt")).toEqual({ t: "link", target: "d.txt" });
    expect(second.get("d.txt")).toBe(first.get("d.txt"));
    expect(second.get("e.txt")).toMatchObject({ t: "file", size: 4 });
  });

  it("takes a snapshot when the listing fails, and none when it rejects, never leaving it unhandled", async () => {
    const cp = repository();
    await snapshotOf(cp, 1);
    const listed = cp.listed.bind(cp);
    cp.listed = async () => undefined;
    const recorder = new TurnRecorder(cp, 2);
    await recorder.beforeTool("bash", false, {});
    expect((recorder as unknown as { snapshot?: unknown }).snapshot).toBeUndefined();
    cp.listed = async () => {
      throw new Error("git vanished");
    };
    // A look at the last listing long enough to let the event loop turn (where an unhandled
    // rejection is reported) before the listing is awaited.
    const still = cp.stillKnown.bind(cp);
    cp.stillKnown = async (folders) => {
      await new Promise((resolve) => setImmediate(resolve));
      return still(folders);
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const rejected = new TurnRecorder(cp, 3);
      await rejected.beforeTool("bash", false, {});
      await new Promise((resolve) => setImmediate(resolve));
      expect((rejected as unknown as { snapshot?: unknown }).snapshot).toBeUndefined();
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      cp.listed = listed;
    }
  });
});
