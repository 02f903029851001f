/**
 * Checkpoints and rewind through the binary: a three-turn session (write_file, edit_file, then
 * bash removing one file and creating another) rewound to each turn, in a git work tree (all of
 * it restored, the user's index, HEAD and refs untouched) and in a plain folder (bash's changes
 * reported as not restored); the history cut and the next turn's number; a conflict and force;
 * a rewind after a restart; busy, unknown turn and unknown session errors.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { promptParams } from "../support/raw-client.js";
import { Rig, firstRequestTokens, git } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

/** The workspace files of the session before turn `t` (4: after turn 3). */
const BEFORE: Record<number, Record<string, string | undefined>> = {
  1: { "new.txt": undefined, "keep.txt": "original\n", "doomed.txt": "doomed\n", "made.txt": undefined },
  2: { "new.txt": "new\n", "keep.txt": "turn1\n", "doomed.txt": "doomed\n", "made.txt": undefined },
  3: { "new.txt": "new\n", "keep.txt": "turn2\n", "doomed.txt": "doomed\n", "made.txt": undefined },
  4: { "new.txt": "new\n", "keep.txt": "turn2\n", "doomed.txt": undefined, "made.txt": "made\n" },
};
const state = () => Object.fromEntries(Object.keys(BEFORE[1]).map((f) => [f, rig.read(f)]));

describe.each([true, false])("three turns, git work tree: %s", (gitRepo) => {
  it.each([1, 2, 3])("rewinds files and history to before turn %i", async (turn) => {
    rig = new Rig(gitRepo);
    const userGit = gitRepo ? { index: fs.readFileSync(path.join(rig.ws.dir, ".git", "index")), head: git(rig.ws.dir, "rev-parse", "HEAD"), refs: git(rig.ws.dir, "for-each-ref") } : undefined;
    const c = await rig.bridge();
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    expect(state()).toEqual(BEFORE[4]);
    const checkpoints = (await rig.events(c, "s")).filter((e) => e.type === "checkpoint").map((e) => e.data);
    const kind = gitRepo ? "git" : "files";
    expect(checkpoints).toEqual([
      { turn: 1, files: 2, kind },
      { turn: 2, files: 1, kind },
      gitRepo ? { turn: 3, files: 2, kind } : { turn: 3, files: 0, kind, uncovered: ["bash"] },
    ]);

    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn });
    expect(result.conflicts).toEqual([]);
    if (gitRepo) {
      expect(state()).toEqual(BEFORE[turn]);
      expect(result.unrestored).toEqual([]);
      expect(result.removed).toEqual(turn === 1 ? ["made.txt", "new.txt"] : ["made.txt"]);
      expect(result.restored).toEqual(turn === 3 ? ["doomed.txt"] : ["doomed.txt", "keep.txt"]);
      // The user's repository is as it was: index bytes, HEAD, refs (no stash, no private ref).
      expect(fs.readFileSync(path.join(rig.ws.dir, ".git", "index")).equals(userGit!.index)).toBe(true);
      expect(git(rig.ws.dir, "rev-parse", "HEAD")).toBe(userGit!.head);
      expect(git(rig.ws.dir, "for-each-ref")).toBe(userGit!.refs);
    } else {
      // What bash did stays, and the answer says so; what the file tools did is undone.
      expect(state()).toEqual({ ...BEFORE[turn], "doomed.txt": undefined, "made.txt": "made\n" });
      expect(result.unrestored).toEqual([{ turn: 3, tools: ["bash"], paths: [] }]);
      expect(result.removed).toEqual(turn === 1 ? ["new.txt"] : []);
      expect(result.restored).toEqual(turn === 3 ? [] : ["keep.txt"]);
    }

    // The history is cut: the log keeps everything and a session/rewound; a rewind that changed
    // files took turn 4 for its own checkpoint (logged after the cut), so the next turn is 5
    // (4 when it changed none), and the model is sent the history as it was before `turn` (the
    // same prompt on it: the same input tokens as turn `turn`'s first request).
    const events = await rig.events(c, "s");
    expect(events.filter((e) => e.type === "session/rewound").map((e) => e.data)).toEqual([{ turn }]);
    expect(events.filter((e) => e.type === "turn/start")).toHaveLength(3);
    const changed = result.restored.length + result.removed.length;
    expect(events.filter((e) => e.type === "checkpoint").slice(3).map((e) => e.data)).toEqual(changed > 0 ? [{ turn: 4, files: changed, kind: "files", rewind: turn }] : []);
    if (changed > 0) expect(events.findIndex((e) => e.type === "checkpoint" && e.data.turn === 4)).toBeGreaterThan(events.findIndex((e) => e.type === "session/rewound"));
    const next = changed > 0 ? 5 : 4;
    await rig.prompt(c, "s");
    const after = await rig.events(c, "s");
    expect(after.filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(next);
    const tokens = firstRequestTokens(after);
    expect(tokens.get(next)).toBe(tokens.get(turn));
    expect(new Set([1, 2, 3].map((t) => tokens.get(t))).size).toBe(3);
  });
});

describe("session/rewind refusals and conflicts", () => {
  it("a file changed by someone else since is a conflict, left alone unless force", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    await rig.prompt(c, "s");
    fs.writeFileSync(path.join(rig.ws.dir, "keep.txt"), "the user's own edit\n");
    const first = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, conversation: false });
    expect(first).toEqual({ restored: [], removed: ["new.txt"], conflicts: ["keep.txt"], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("the user's own edit\n");
    // Files only: the history keeps turns 1 and 2, so turn 1 can be rewound again; what the
    // first rewind did is done, and the conflict it left is what force now overwrites.
    const again = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, force: true });
    expect(again).toEqual({ restored: ["keep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("new.txt")).toBeUndefined();
    // That rewind also cut the history (conversation defaults to true): turn 1 is gone, and a
    // third rewind of it is refused without touching the files.
    fs.writeFileSync(path.join(rig.ws.dir, "keep.txt"), "later\n");
    expect((await rig.call(c, "session/rewind", { sessionId: "s", turn: 1, force: true })).error).toMatchObject({ code: -32602, data: { kind: "unknown-turn" } });
    expect(rig.read("keep.txt")).toBe("later\n");
  });

  it("force overwrites a conflicting file with its content from before the turn", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    await rig.prompt(c, "s");
    fs.writeFileSync(path.join(rig.ws.dir, "keep.txt"), "the user's own edit\n");
    fs.chmodSync(path.join(rig.ws.dir, "keep.txt"), 0o640);
    const forced = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 2, force: true });
    expect(forced).toEqual({ restored: ["keep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
  });

  it("answers an unknown turn, a cut turn and an unknown session with -32602, and a busy session with -32001", async () => {
    rig = new Rig(false);
    const c = await rig.bridge(
      { turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "new\n" } }] }, { text: "one" }] }, { steps: [{ text: "slow", delayMs: 400 }] }] },
    );
    await rig.prompt(c, "s");
    const unknownTurn = await rig.call(c, "session/rewind", { sessionId: "s", turn: 5 });
    expect(unknownTurn.error).toMatchObject({ code: -32602, data: { kind: "unknown-turn", turns: 1 } });
    for (const bad of [{ sessionId: "s", turn: 0 }, { sessionId: "s", turn: "1" }, { sessionId: "s", turn: 1, force: "yes" }, { sessionId: "../x", turn: 1 }]) {
      expect((await rig.call(c, "session/rewind", bad)).error?.code).toBe(-32602);
    }
    expect((await rig.call(c, "session/rewind", { sessionId: "nobody", turn: 1 })).error).toMatchObject({ code: -32602, data: { kind: "unknown-session" } });
    c.request("slow", "session/prompt", promptParams("s", "slow"));
    await c.waitFrame((f: any) => f.method === "session.event" && f.params.event.type === "turn/start" && f.params.event.data.turn === 2);
    expect((await rig.call(c, "session/rewind", { sessionId: "s", turn: 1 })).error).toMatchObject({ code: -32001, data: { kind: "session-busy" } });
    await c.response("slow");
    await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(rig.read("new.txt")).toBeUndefined();
    // Turn 1 and 2 were cut from the history: they cannot be rewound again.
    expect((await rig.call(c, "session/rewind", { sessionId: "s", turn: 1 })).error).toMatchObject({ code: -32602, data: { kind: "unknown-turn" } });
    // The process kept serving.
    expect((await rig.ok(c, "session/list", {})).sessions).toHaveLength(1);
  });
});

describe("rewind after a restart", () => {
  it.each([true, false])("a new bridge resumes the session from its log and rewinds it (git: %s)", async (gitRepo) => {
    rig = new Rig(gitRepo);
    const first = await rig.bridge();
    for (let t = 1; t <= 3; t++) await rig.prompt(first, "s");
    await rig.ok(first, "shutdown");
    const second = await rig.bridge();
    const result = await rig.ok(second, "session/rewind", { sessionId: "s", turn: 2 });
    expect(result.conflicts).toEqual([]);
    expect(rig.read("keep.txt")).toBe("turn1\n");
    expect(rig.read("new.txt")).toBe("new\n");
    expect(rig.read("doomed.txt")).toBe(gitRepo ? "doomed\n" : undefined);
    // The cut history survives a restart too: the next turn (5: the rewind's own checkpoint
    // took 4) is sent the history before turn 2.
    await rig.ok(second, "shutdown");
    const third = await rig.bridge();
    await rig.prompt(third, "s");
    const tokens = firstRequestTokens(await rig.events(third, "s"));
    expect(tokens.get(5)).toBe(tokens.get(2));
  });
});

describe("without a session log", () => {
  it("checkpoints go to a private temporary folder of the process, removed when it exits, and rewind works the same", async () => {
    rig = new Rig(false);
    const tmp = fs.mkdtempSync(path.join(rig.root, "tmp-"));
    const c = await rig.bridge(undefined, { ...process.env, TMPDIR: tmp }, {}, ["--stdio", "--no-session-log"]);
    await rig.prompt(c, "s");
    await rig.prompt(c, "s");
    const stores = fs.readdirSync(tmp).filter((n) => n.startsWith("harness-checkpoints-"));
    expect(stores).toHaveLength(1);
    expect(fs.statSync(path.join(tmp, stores[0])).mode & 0o777).toBe(0o700);
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 })).toEqual({ restored: ["keep.txt"], removed: ["new.txt"], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(fs.readdirSync(rig.root)).toEqual([path.basename(tmp)]);
    await rig.ok(c, "shutdown");
    await c.exit();
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith("harness-checkpoints-"))).toEqual([]);
  });
});

describe("when no checkpoint can be kept", () => {
  it("a TMPDIR where no private folder can be made costs the checkpoint, never the turn", async () => {
    rig = new Rig(false);
    const missing = path.join(rig.root, "no-such-folder");
    const c = await rig.bridge(undefined, { ...process.env, TMPDIR: missing }, {}, ["--stdio", "--no-session-log"]);
    await rig.prompt(c, "s"); // the turn writes its files, as without checkpoints
    expect(rig.read("keep.txt")).toBe("turn1\n");
    expect(fs.existsSync(missing)).toBe(false);
    await c.stderrMatching(/the turn runs without a checkpoint: no checkpoint store can be made \(ENOENT/);
    // A rewind cannot restore what was never kept: a specific error, and the bridge serves on.
    const rewind = await rig.call(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(rewind.error).toMatchObject({ code: -32603, data: { kind: "checkpoints-unavailable", sessionId: "s" } });
    expect(rewind.error?.message).toMatch(/private folder under TMPDIR/);
    await rig.prompt(c, "s");
  });
});

describe("forks", () => {
  it("a fork taken before a rewind keeps the history, and can rewind the files of the turns it copied", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    await rig.prompt(c, "s");
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "kept" });
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "at1", turn: 1 });
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 2 })).toMatchObject({ restored: ["keep.txt"], conflicts: [] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
    // The fork still holds both turns: its history and their checkpoint events.
    const kept = await rig.events(c, "kept");
    expect(kept.filter((e) => e.type === "checkpoint").map((e) => e.data.turn)).toEqual([1, 2]);
    expect(kept.some((e) => e.type === "session/rewound")).toBe(false);
    // The fork at turn 1 rewinds turn 1's files: the content the session last wrote is turn 1's again.
    expect(await rig.ok(c, "session/rewind", { sessionId: "at1", turn: 1 })).toEqual({ restored: ["keep.txt"], removed: ["new.txt"], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("new.txt")).toBeUndefined();
  });

  it("a fork whose checkpoints cannot be copied fails whole: no fork is left to be found, and the same fork goes through once they can", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    // The source's journal, a symbolic link: never followed, so the copy fails after the log was forked.
    const journal = path.join(rig.store("s"), "journal.jsonl");
    fs.renameSync(journal, `${journal}.aside`);
    fs.symlinkSync(`${journal}.aside`, journal);
    const failed = await rig.call(c, "session/fork", { sessionId: "s", newSessionId: "kept" });
    expect(failed.error?.message).toMatch(/ELOOP/);
    expect((await rig.call(c, "session/read", { sessionId: "kept" })).error).toMatchObject({ data: { kind: "unknown-session" } });
    expect((await rig.ok(c, "session/list")).sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["s"]);
    expect(fs.existsSync(rig.store("kept"))).toBe(false);
    fs.renameSync(`${journal}.aside`, journal);
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "kept" });
    expect(await rig.ok(c, "session/rewind", { sessionId: "kept", turn: 1 })).toMatchObject({ restored: ["keep.txt"], removed: ["new.txt"], conflicts: [] });
  });
});

describe("a session id used again", () => {
  it("a new session whose id an old one had does not take on the old one's checkpoints: a rewind restores its own turn's files", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    const log = path.join(path.dirname(rig.store("s")), "s.jsonl");
    const fork = path.join(path.dirname(rig.store("s")), "k.jsonl");
    await rig.ok(c, "session/fork", { sessionId: "s", newSessionId: "k" });
    await c.dispose();
    // The logs go (by hand, or a delete cut short); their checkpoints stay beside them.
    fs.rmSync(log);
    fs.rmSync(fork);
    expect(fs.existsSync(rig.store("s"))).toBe(true);
    rig.ws.file("keep.txt", "the user's own\n");
    fs.rmSync(path.join(rig.ws.dir, "new.txt"));
    const d = await rig.bridge();
    await rig.prompt(d, "s");
    await rig.ok(d, "session/fork", { sessionId: "s", newSessionId: "k" });
    for (const id of ["k", "s"]) {
      expect(await rig.ok(d, "session/rewind", { sessionId: id, turn: 1 })).toMatchObject({ restored: ["keep.txt"], removed: ["new.txt"], conflicts: [] });
      expect(rig.read("keep.txt")).toBe("the user's own\n");
      // Back as the new session's turn 1 left them, for the next one.
      rig.ws.file("keep.txt", "turn1\n");
      rig.ws.file("new.txt", "new\n");
    }
  });
});

describe("compaction", () => {
  it("a turn folded into a later summary cannot be cut from the history (turn-compacted), but its files can be rewound", async () => {
    rig = new Rig(false);
    const script = {
      turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "new\n" } }] }, { text: "one" }] }, { steps: [{ text: "two" }] }],
      compaction: { steps: [{ text: "SUMMARY: wrote new.txt" }] },
    };
    const c = await rig.bridge(script);
    await rig.prompt(c, "s", `Write new.txt. ${"Some long context. ".repeat(200)}`);
    await rig.prompt(c, "s");
    expect((await rig.ok(c, "session/compact", { sessionId: "s" })).compacted).toBe(true);
    const refused = await rig.call(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(refused.error).toMatchObject({ code: -32602, data: { kind: "turn-compacted" } });
    expect(rig.read("new.txt")).toBe("new\n");
    expect(await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, conversation: false })).toEqual({ restored: [], removed: ["new.txt"], conflicts: [], unrestored: [] });
    expect((await rig.events(c, "s")).some((e) => e.type === "session/rewound")).toBe(false);
  });
});
