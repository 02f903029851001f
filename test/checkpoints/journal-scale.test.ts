/**
 * Reading the journal is linear in its records: `readJournal` runs synchronously at every
 * `session/rewind`, before any pacing, so a quadratic step holds the whole bridge. A rewind of
 * twenty thousand files journals twenty thousand captures for its own checkpoint (one turn), and
 * every later rewind reads them again. Guarded by the test's timeout, not a timed assertion: at
 * a hundred thousand captures a linear read takes well under a second, a search per capture
 * (as before) about forty seconds.
 */
import { describe, expect, it } from "vitest";
import { readJournal } from "../../src/agent/checkpoints/rewind.js";
import type { JournalRecord } from "../../src/agent/checkpoints/store.js";

describe("reading the journal", () => {
  it("one turn's hundred thousand captures are read in linear time, a path captured twice kept once", { timeout: 10_000 }, () => {
    const PATHS = 100_000;
    const records: JournalRecord[] = [];
    for (let i = 0; i < PATHS; i++) records.push({ type: "capture", turn: 2, path: `src/some/folder/file-${i}.ts`, before: null, rewind: 1 });
    records.push({ type: "capture", turn: 2, path: "src/some/folder/file-0.ts", before: { t: "other" }, rewind: 1 });
    const view = readJournal(records);
    expect(view.turns).toHaveLength(1);
    expect(view.turns[0].entries).toHaveLength(PATHS);
    expect(view.turns[0].entries[0]).toEqual({ path: "src/some/folder/file-0.ts", before: null });
  });

  it("a turn cut short whose number is taken again after a rewind undid it gets the paths its new captures name", () => {
    const file = { t: "file", hash: "a".repeat(64), mode: 0o644, size: 1 } as const;
    const view = readJournal([
      { type: "capture", turn: 3, path: "a.txt", before: null },
      { type: "capture", turn: 3, path: "b.txt", before: null },
      // A rewind to turn 3 undid both (a.txt left as a conflict), and the next turn took number 3 again.
      { type: "rewind", turn: 3, lastTurn: 3, files: true, conversation: true, states: [], conflicts: ["a.txt"] },
      { type: "capture", turn: 3, path: "b.txt", before: file },
      { type: "capture", turn: 3, path: "a.txt", before: file },
    ]);
    expect(view.turns).toHaveLength(1);
    expect(view.turns[0].entries).toEqual([
      { path: "a.txt", before: null },
      { path: "b.txt", before: file },
    ]);
  });
});
