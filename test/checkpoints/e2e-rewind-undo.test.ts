/**
 * A rewind undone, through the binary: a rewind that changes files first keeps their state as a
 * checkpoint of its own (turn 4 after three turns: `checkpoint { turn: 4, files, kind: "files",
 * rewind: 1 }`), so `session/rewind { turn: 4, conversation: false }` puts every file back byte
 * for byte and mode — files the rewind restored, the files it removed (created by the turns), and
 * it removes what it made again — while the fork taken first holds the conversation. The same
 * after a restart; a file changed after the rewind is a conflict unless force; a later rewind to
 * an earlier turn leaves the rewind's checkpoint alone; `conversation: true` on it is refused; a
 * fork after the rewind can undo it; what the size cap keeps out is announced and reported.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RawClient } from "../support/raw-client.js";
import { turns } from "../support/scripts.js";
import { Rig } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

/**
 * Turn 1 creates new.txt and sub/deep.txt and overwrites keep.txt; turn 2 edits keep.txt; turn 3
 * runs bash: removes doomed.txt, makes a binary made.bin (0755) and sets keep.txt to 0640 (in a
 * plain folder bash is not covered: the rewind leaves those alone, and so does its undo).
 */
const SCRIPT = turns(
  [
    {
      toolCalls: [
        { name: "write_file", arguments: { path: "new.txt", content: "new\n" } },
        { name: "write_file", arguments: { path: "sub/deep.txt", content: "deep\n" } },
        { name: "write_file", arguments: { path: "keep.txt", content: "turn1\n" } },
      ],
    },
    { text: "one" },
  ],
  [{ toolCalls: [{ name: "edit_file", arguments: { path: "keep.txt", oldText: "turn1", newText: "turn2" } }] }, { text: "two" }],
  [{ toolCalls: [{ name: "bash", arguments: { command: "rm doomed.txt && printf 'bin\\000\\377\\n' > made.bin && chmod 755 made.bin && chmod 640 keep.txt" } }] }, { text: "three" }],
  [{ text: "four" }],
  [{ text: "five" }],
);

/** Every file of the workspace (not .git, not the script): its bytes (base64) and permission bits. */
function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(rig.ws.dir, full);
      if (rel === ".git" || rel === ".script.json") continue;
      if (entry.isDirectory()) walk(full);
      else out[rel] = `${(fs.lstatSync(full).mode & 0o7777).toString(8)} ${fs.readFileSync(full).toString("base64")}`;
    }
  };
  walk(rig.ws.dir);
  return out;
}

/** The data of a session's `checkpoint` events. */
const checkpoints = async (c: RawClient, sessionId: string) => (await rig.events(c, sessionId)).filter((e) => e.type === "checkpoint").map((e) => e.data);

describe.each([true, false])("undoing a rewind, git work tree: %s", (gitRepo) => {
  it("fork, rewind to turn 1, then rewind turn 4 with conversation false: every file is back, and the fork holds the conversation", async () => {
    rig = new Rig(gitRepo);
    // `full`: turn 3's chmod must work wherever the suite runs. Confined by Landlock as root (a
    // container without bubblewrap), bash may not chmod at all (docs/tools.md), and the undo of
    // modes is what this checks, not the confinement.
    const c = await rig.bridge(SCRIPT, process.env, { permissionMode: "full" });
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    const afterTurns = snapshot();
    expect(afterTurns["made.bin"]).toBe(`755 ${Buffer.from("bin\0\xff\n", "latin1").toString("base64")}`);
    expect(afterTurns["keep.txt"]).toBe(`640 ${Buffer.from("turn2\n").toString("base64")}`);

    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "kept" });
    const rewound = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(rewound.conflicts).toEqual([]);
    expect(rewound.removed).toEqual(gitRepo ? ["made.bin", "new.txt", "sub/deep.txt"] : ["new.txt", "sub/deep.txt"]);
    expect(rewound.restored).toEqual(gitRepo ? ["doomed.txt", "keep.txt"] : ["keep.txt"]);
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("new.txt")).toBeUndefined();
    // The rewind's own checkpoint: turn 4, logged after its session/rewound (which cut turns 1–3).
    const events = await rig.events(c, "s");
    const own = { turn: 4, files: rewound.restored.length + rewound.removed.length, kind: "files", rewind: 1 };
    expect(events.filter((e) => e.type === "checkpoint").at(-1).data).toEqual(own);
    expect(events.at(-1)).toMatchObject({ type: "checkpoint" });
    expect(events.at(-2)).toMatchObject({ type: "session/rewound", data: { turn: 1 } });

    // Turn 4 has no conversation of its own: cutting it is refused, and nothing changes.
    const refused = await rig.call(c, "session/rewind", { sessionId: "s", turn: 4 });
    expect(refused.error).toMatchObject({ code: -32602, data: { kind: "rewind-turn" } });
    expect(rig.read("keep.txt")).toBe("original\n");

    const undo = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 4, conversation: false });
    expect(undo).toEqual({
      restored: gitRepo ? ["keep.txt", "made.bin", "new.txt", "sub/deep.txt"] : ["keep.txt", "new.txt", "sub/deep.txt"],
      removed: gitRepo ? ["doomed.txt"] : [],
      conflicts: [],
      unrestored: [],
    });
    expect(snapshot()).toEqual(afterTurns);
    // The undo is itself undoable (turn 5): rewinding it does the rewind again.
    expect((await checkpoints(c, "s")).at(-1)).toEqual({ ...own, turn: 5, rewind: 4 });
    const redo = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 5, conversation: false });
    expect(redo).toMatchObject({ restored: rewound.restored, removed: rewound.removed, conflicts: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 6, conversation: false })).toMatchObject({ conflicts: [] });
    expect(snapshot()).toEqual(afterTurns);

    // The fork holds the conversation and the turns' checkpoints, and goes on from turn 4.
    expect((await checkpoints(c, "kept")).map((d) => d.turn)).toEqual([1, 2, 3]);
    await rig.prompt(c, "kept");
    expect((await rig.events(c, "kept")).filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(4);
    // The rewound session's next turn comes after its rewinds' turns (4–7).
    await rig.prompt(c, "s");
    expect((await rig.events(c, "s")).filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(8);
  });

  it("after a restart: a new bridge resumes the session from its log and journal and undoes the rewind", async () => {
    rig = new Rig(gitRepo);
    const first = await rig.bridge(SCRIPT);
    for (let t = 1; t <= 3; t++) await rig.prompt(first, "s");
    const afterTurns = snapshot();
    await rig.ok(first, "session/fork", { sessionId: "s", newSessionId: "kept" });
    await rig.ok(first, "session/rewind", { sessionId: "s", turn: 1 });
    await rig.ok(first, "shutdown");
    expect(rig.read("new.txt")).toBeUndefined();

    const second = await rig.bridge(SCRIPT);
    expect((await checkpoints(second, "s")).map((d) => d.turn)).toEqual([1, 2, 3, 4]);
    const undo = await rig.ok(second, "session/rewind", { sessionId: "s", turn: 4, conversation: false });
    expect(undo.conflicts).toEqual([]);
    expect(snapshot()).toEqual(afterTurns);
    await rig.ok(second, "shutdown");
    // Turn numbers survive the restart: 4 and 5 are the rewinds', the next turn is 6.
    const third = await rig.bridge(SCRIPT);
    await rig.prompt(third, "s");
    expect((await rig.events(third, "s")).filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(6);
  });

  it("a file changed after the rewind is a conflict, left alone unless force", async () => {
    rig = new Rig(gitRepo);
    const c = await rig.bridge(SCRIPT);
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    const afterTurns = snapshot();
    await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    fs.writeFileSync(path.join(rig.ws.dir, "keep.txt"), "mine\n");
    const first = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 4, conversation: false });
    expect(first.conflicts).toEqual(["keep.txt"]);
    expect(first.restored).not.toContain("keep.txt");
    expect(rig.read("keep.txt")).toBe("mine\n");
    expect(rig.read("new.txt")).toBe("new\n");
    const forced = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 4, conversation: false, force: true });
    expect(forced).toEqual({ restored: ["keep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(snapshot()).toEqual(afterTurns);
  });
});

describe("a rewind's checkpoint and later rewinds", () => {
  it("a later rewind to an earlier turn leaves it alone; only a rewind to it undoes it, with the turns after it", async () => {
    rig = new Rig(false);
    const c = await rig.bridge(SCRIPT);
    for (let t = 1; t <= 2; t++) await rig.prompt(c, "s");
    // Files only: turns 1 and 2 stay in the history, and rewindable.
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 2, conversation: false })).toMatchObject({ restored: ["keep.txt"] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
    expect((await checkpoints(c, "s")).at(-1)).toEqual({ turn: 3, files: 1, kind: "files", rewind: 2 });
    // Rewinding turn 2 again changes nothing (its changes are undone already), and takes no turn.
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 2, conversation: false })).toEqual({ restored: [], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
    // Turn 1: back to before it, not to before the rewind of turn 2.
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, conversation: false })).toEqual({ restored: ["keep.txt"], removed: ["new.txt", "sub/deep.txt"], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect((await checkpoints(c, "s")).map((d) => [d.turn, d.rewind])).toEqual([[1, undefined], [2, undefined], [3, 2], [4, 1]]);
    // Rewinding turn 3 (the rewind of turn 2) undoes it and what came after it (turn 4): the files as they were after turn 2.
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 3, conversation: false })).toEqual({ restored: ["keep.txt", "new.txt", "sub/deep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("turn2\n");
    expect(rig.read("sub/deep.txt")).toBe("deep\n");
  });
});

describe("a rewind's checkpoint in forks and under the size cap", () => {
  it("a fork taken after the rewind gets its checkpoint, and can undo it", async () => {
    rig = new Rig(false);
    const c = await rig.bridge(SCRIPT);
    for (let t = 1; t <= 2; t++) await rig.prompt(c, "s");
    await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "after" });
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "at2", turn: 2 });
    expect((await checkpoints(c, "after")).at(-1)).toEqual({ turn: 3, files: 3, kind: "files", rewind: 1 });
    // A fork at turn 2 copies the log up to the next prompt: the rewind's events, and its journal records with them.
    expect((await checkpoints(c, "at2")).at(-1)).toEqual({ turn: 3, files: 3, kind: "files", rewind: 1 });
    expect(await rig.ok(c, "session/rewind", { sessionId: "after", turn: 3, conversation: false })).toEqual({ restored: ["keep.txt", "new.txt", "sub/deep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("turn2\n");
    expect(rig.read("sub/deep.txt")).toBe("deep\n");
  });

  it("what the cap keeps out is announced for the rewind's turn (checkpoint/skipped), and its undo reports it unrestored", async () => {
    rig = new Rig(false);
    // Room for the turns' contents ("original\n", "turn1\n": 15 bytes), none for the rewind's.
    const c = await rig.bridge(SCRIPT, { ...process.env, HARNESS_CHECKPOINT_MAX_BYTES: "15" });
    for (let t = 1; t <= 2; t++) await rig.prompt(c, "s");
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 })).toMatchObject({ restored: ["keep.txt"], removed: ["new.txt", "sub/deep.txt"], conflicts: [] });
    const events = await rig.events(c, "s");
    expect(events.slice(-3).map((e) => [e.type, e.data])).toEqual([
      ["session/rewound", { turn: 1 }],
      ["checkpoint/skipped", { turn: 3, paths: ["keep.txt", "new.txt", "sub/deep.txt"], reason: "size-cap" }],
      ["checkpoint", { turn: 3, files: 3, kind: "files", rewind: 1 }],
    ]);
    const undo = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 3, conversation: false });
    expect(undo).toEqual({ restored: [], removed: [], conflicts: [], unrestored: [{ turn: 3, tools: [], paths: ["keep.txt", "new.txt", "sub/deep.txt"] }] });
    expect(rig.read("keep.txt")).toBe("original\n");
    // That changed nothing: no checkpoint of its own, no turn number taken.
    expect((await checkpoints(c, "s")).map((d) => d.turn)).toEqual([1, 2, 3]);
    await rig.prompt(c, "s");
    expect((await rig.events(c, "s")).filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(4);
  });
});
