/**
 * Which turn a rewind reports a path it could not put back under (`unrestored`): a path whose
 * old content is lost goes under the first undone turn that changed it (the one whose state
 * before it is the one the rewind goes back to), and a path a turn skipped is named under that
 * turn only when the rewind did not put it back (restored or removed) through another turn's entry.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256, type FileState } from "../../src/agent/checkpoints/path-state.js";
import { readJournal, rewindFiles } from "../../src/agent/checkpoints/rewind.js";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const file = (content: string): FileState => ({ t: "file", hash: sha256(Buffer.from(content)), mode: 0o644, size: content.length });

describe("what a rewind reports unrestored", () => {
  it("a lost path under the first undone turn that changed it; a skipped one only when not put back", async () => {
    ws = tempWorkspace("hb-unrestored-");
    root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-unrestored-root-"));
    const cp = new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
    // Kept in the store: the old content of restored.txt. Nothing else is.
    cp.store.put(sha256(Buffer.from("restored before\n")), Buffer.from("restored before\n"));
    // What the workspace holds now: what turn 3 (or 2) left, so nothing is a conflict.
    for (const name of ["both.txt", "late.txt", "restored.txt", "removed.txt", "gone.txt"]) ws.file(name, `${name} now\n`);
    const now = (name: string) => file(`${name} now\n`);
    const view = readJournal([
      { type: "turn", turn: 1, kind: "files", entries: [{ path: "early.txt", before: null, after: null }], uncovered: [], skipped: [] },
      {
        type: "turn",
        turn: 2,
        kind: "files",
        entries: [
          { path: "both.txt", before: file("both before 2\n"), after: file("both after 2\n") },
          { path: "restored.txt", before: file("restored before\n"), after: now("restored.txt") },
          { path: "removed.txt", before: null, after: now("removed.txt") },
          { path: "gone.txt", before: file("gone before\n"), after: now("gone.txt") },
        ],
        uncovered: [],
        skipped: ["gone.txt"],
      },
      {
        type: "turn",
        turn: 3,
        kind: "files",
        entries: [
          { path: "both.txt", before: file("both after 2\n"), after: now("both.txt") },
          { path: "late.txt", before: { t: "other" }, after: now("late.txt") },
        ],
        uncovered: ["bash"],
        skipped: ["restored.txt", "removed.txt", "both.txt"],
      },
    ]);
    const out = await rewindFiles(cp, view, 2, false);
    expect(out.restored).toEqual(["restored.txt"]);
    expect(out.removed).toEqual(["removed.txt"]);
    expect(out.conflicts).toEqual([]);
    expect(out.unrestored).toEqual([
      { turn: 2, tools: [], paths: ["both.txt", "gone.txt"] },
      { turn: 3, tools: ["bash"], paths: ["both.txt", "late.txt"] },
    ]);
    expect(fs.readFileSync(path.join(ws.dir, "restored.txt"), "utf8")).toBe("restored before\n");
    expect(fs.existsSync(path.join(ws.dir, "removed.txt"))).toBe(false);
    expect(fs.readFileSync(path.join(ws.dir, "both.txt"), "utf8")).toBe("both.txt now\n");
  });
});
