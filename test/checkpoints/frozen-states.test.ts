/**
 * States are shared: a pass answers an unchanged file with the very state the last pass made
 * (path-state.ts `KnownFile`), and a referenced one with the very reference (`asBlob`), so one
 * object sits in the stat cache, in a turn's snapshot, in its turn record's entries and in the
 * next turn's snapshot at once. None may be changed once handed out: here every state `keep`
 * and `look` hand out is frozen, and two turns (a git snapshot each, a missing blob among the
 * references, contents, modes and a removal changed) and a rewind run over them. Module code is
 * strict: a write to a frozen state throws (and a snapshot that throws names its tool
 * `uncovered`).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { PathState } from "../../src/agent/checkpoints/path-state.js";
import { readJournal, rewindFiles } from "../../src/agent/checkpoints/rewind.js";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll, git } from "./rewind-support.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const frozen = <T extends PathState>(state: T): T => (state === null ? state : Object.freeze(state));

/** Checkpoints whose every state handed out is frozen from then on. */
function freezingCheckpoints(dir: string): SessionCheckpoints {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-frozen-root-"));
  const cp = new SessionCheckpoints(new CheckpointStore(root, "s"), dir);
  const keep = cp.keep.bind(cp);
  const look = cp.look.bind(cp);
  cp.keep = (...args) => {
    const kept = keep(...args);
    frozen(kept.state);
    return kept;
  };
  cp.look = (...args) => frozen(look(...args));
  return cp;
}

async function turn(cp: SessionCheckpoints, n: number, change: () => void): Promise<void> {
  const recorder = new TurnRecorder(cp, n);
  await recorder.beforeTool("bash", false, {});
  change();
  await (recorder as unknown as { close(): Promise<unknown> }).close();
}

describe("states shared between passes", () => {
  it("are never changed: two turns and a rewind over frozen states record and restore what they should", async () => {
    ws = tempWorkspace("hb-frozen-");
    ws.file("a.txt", "alpha\n");
    ws.file("b.txt", "bravo\n");
    ws.file("sub/c.txt", "charlie\n");
    commitAll(ws.dir);
    // An index entry naming a blob the repository does not hold: referenced, then copied after all.
    ws.file("ghost.txt", "ghost\n");
    const ghost = git(ws.dir, "hash-object", "ghost.txt").trim();
    git(ws.dir, "update-index", "--add", "--info-only", "--cacheinfo", `100644,${ghost},ghost.txt`);
    ws.file("untracked.txt", "untracked\n");
    const cp = freezingCheckpoints(ws.dir);
    const at = (rel: string) => path.join(ws.dir, rel);
    const bMode = fs.statSync(at("b.txt")).mode & 0o7777;

    await turn(cp, 1, () => {
      fs.writeFileSync(at("a.txt"), "ALPHA one\n");
      fs.chmodSync(at("b.txt"), bMode ^ 0o111);
      fs.rmSync(at("untracked.txt"));
    });
    // The second snapshot answers what turn 1 left from the states it made (frozen by now).
    await turn(cp, 2, () => {
      fs.writeFileSync(at("b.txt"), "BRAVO two\n");
      fs.writeFileSync(at("ghost.txt"), "GHOST two\n");
      fs.rmSync(at("sub/c.txt"));
    });

    const records = cp.store.journal().filter((r) => r.type === "turn");
    expect(records.map((r) => [r.turn, r.uncovered, r.entries.map((e) => e.path)])).toEqual([
      [1, [], ["a.txt", "b.txt", "untracked.txt"]],
      [2, [], ["b.txt", "ghost.txt", "sub/c.txt"]],
    ]);
    const ghostBefore = records[1].entries.find((e) => e.path === "ghost.txt")!.before;
    expect(ghostBefore).toMatchObject({ t: "file" });
    expect(ghostBefore).not.toHaveProperty("git");

    const capture = async (paths: string[]) => new Map(paths.map((rel) => [rel, cp.keep(rel).state] as const));
    const done = await rewindFiles(cp, readJournal(cp.store.journal()), 1, false, capture);
    expect(done.conflicts).toEqual([]);
    expect(done.unrestored).toEqual([]);
    expect(fs.readFileSync(at("a.txt"), "utf8")).toBe("alpha\n");
    expect(fs.readFileSync(at("b.txt"), "utf8")).toBe("bravo\n");
    expect(fs.statSync(at("b.txt")).mode & 0o7777).toBe(bMode);
    expect(fs.readFileSync(at("ghost.txt"), "utf8")).toBe("ghost\n");
    expect(fs.readFileSync(at("sub/c.txt"), "utf8")).toBe("charlie\n");
    expect(fs.readFileSync(at("untracked.txt"), "utf8")).toBe("untracked\n");
    // A pass after the rewind, over the states it made and those it left alone.
    for (const rel of ["a.txt", "b.txt", "ghost.txt", "sub/c.txt", "untracked.txt"]) expect(cp.look(rel)).toMatchObject({ t: "file" });
  });
});
