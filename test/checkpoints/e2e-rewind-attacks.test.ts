/**
 * Checkpoints against a hostile workspace, through the binary: a symbolic link the model
 * planted where a file it wrote was (never written through, a conflict unless force); a rewind
 * racing a process that swaps a folder for a link out of the workspace (nothing outside is
 * written or removed); a git repository whose own config would run code (core.fsmonitor,
 * core.hooksPath, a clean/smudge/process filter through .gitattributes, a textconv) — proven
 * armed with plain git, and never fired by checkpoints or a rewind (which reads committed
 * contents back with `git cat-file`); a partial clone whose promisor remote's transport would
 * run a program on a missing object (copied, not referenced; a repository that became one
 * after the checkpoint is not read back), never fired; the size cap's
 * `checkpoint/skipped`; the store's private modes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { turns } from "../support/scripts.js";
import { Rig, THREE_TURNS, git } from "./rewind-support.js";

let rig: Rig;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) c();
  await rig?.dispose();
});

function outsideDir(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-outside-")));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("links the model planted", () => {
  it("a file replaced by a link to outside is a conflict; force replaces the link and never writes its target", async () => {
    rig = new Rig(false);
    const outside = outsideDir();
    fs.writeFileSync(path.join(outside, "secret.txt"), "outside\n");
    const script = turns(
      [{ toolCalls: [{ name: "write_file", arguments: { path: "keep.txt", content: "turn1\n" } }] }, { text: "one" }],
      [{ toolCalls: [{ name: "bash", arguments: { command: `rm keep.txt && ln -s ${path.join(outside, "secret.txt")} keep.txt` } }] }, { text: "two" }],
    );
    const c = await rig.bridge(script);
    await rig.prompt(c, "s");
    await rig.prompt(c, "s");
    expect(fs.lstatSync(path.join(rig.ws.dir, "keep.txt")).isSymbolicLink()).toBe(true);
    const refused = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, conversation: false });
    expect(refused.conflicts).toEqual(["keep.txt"]);
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside\n");
    const forced = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, force: true });
    expect(forced.restored).toEqual(["keep.txt"]);
    expect(fs.lstatSync(path.join(rig.ws.dir, "keep.txt")).isFile()).toBe(true);
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside\n");
  });

  it("a rewind racing a folder swapped for a link to outside writes and removes nothing outside", async () => {
    rig = new Rig(false);
    const outside = outsideDir();
    const names = Array.from({ length: 40 }, (_, i) => `f${i}.txt`);
    for (const n of names) {
      rig.ws.file(`sub/${n}`, "orig\n");
      fs.writeFileSync(path.join(outside, n), "outside\n");
    }
    const calls = names.flatMap((n) => [
      { name: "write_file", arguments: { path: `sub/${n}`, content: "turn1\n" } },
      { name: "write_file", arguments: { path: `sub/new-${n}`, content: "new\n" } },
    ]);
    const c = await rig.bridge(turns([{ toolCalls: calls }, { text: "one" }]));
    await rig.prompt(c, "s");
    // Swaps sub for a link to outside and back, as fast as it can, until killed.
    const swapper: ChildProcess = spawn(process.execPath, [
      "-e",
      `const fs=require("fs");const s=${JSON.stringify(path.join(rig.ws.dir, "sub"))};let n=0;for(;;){try{fs.renameSync(s,s+".real");fs.symlinkSync(${JSON.stringify(outside)},s);fs.unlinkSync(s);fs.renameSync(s+".real",s);}catch{}if(++n===100)process.stdout.write("swapping\\n");}`,
    ]);
    cleanups.push(() => swapper.kill("SIGKILL"));
    await new Promise((r) => swapper.stdout!.once("data", r));
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, force: true });
    swapper.kill("SIGKILL");
    await new Promise((r) => swapper.once("exit", r));
    // Outside is as it was: the same files, the same content, nothing added or removed.
    expect(fs.readdirSync(outside).sort()).toEqual([...names].sort());
    for (const n of names) expect(fs.readFileSync(path.join(outside, n), "utf8")).toBe("outside\n");
    // What was put back is inside (a folder missing in the swap's instant is made afresh, inside
    // the workspace; a path seen through the link is a conflict), and no temporary file is left.
    expect(result.restored.length + result.removed.length + result.conflicts.length).toBeGreaterThan(0);
    const sub = path.join(rig.ws.dir, "sub");
    for (const dir of [sub, `${sub}.real`]) {
      if (fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) expect(fs.readdirSync(dir).filter((n) => n.includes(".rewind-"))).toEqual([]);
    }
  });
});

describe("a hostile git repository", () => {
  it("never runs a git the workspace provides, whatever PATH holds (`.`, an empty entry, a relative or inside folder)", async () => {
    // Checkpoints run git on their own at every turn: a workspace `git` reached through PATH
    // would be the repository's code run for merely opening a session there.
    const traps = outsideDir();
    const trap = `#!/bin/sh\ntouch ${traps}/fired-$$\nexit 1\n`;
    rig = new Rig(true, "hb-rewind-", {
      setup: (ws) => {
        for (const rel of ["git", "bin/git", "tools/git"]) ws.file(rel, trap);
      },
    });
    for (const rel of ["git", "bin/git", "tools/git"]) fs.chmodSync(path.join(rig.ws.dir, rel), 0o755);
    const hostilePath = [".", "", "tools", path.join(rig.ws.dir, "bin"), process.env.PATH ?? "/usr/bin:/bin"].join(":");
    const c = await rig.bridge(THREE_TURNS, { ...process.env, PATH: hostilePath });
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    // The system's git ran (a git snapshot each turn), the workspace's never did.
    expect((await rig.events(c, "s")).filter((e) => e.type === "checkpoint").map((e) => e.data.kind)).toEqual(["git", "git", "git"]);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result.conflicts).toEqual([]);
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(fs.readdirSync(traps).filter((n) => n.startsWith("fired-"))).toEqual([]);
  });

  it("runs none of its fsmonitor, hooks, filters or textconv while checkpointing and rewinding", async () => {
    rig = new Rig(true);
    const traps = outsideDir();
    const evil = path.join(traps, "evil.sh");
    fs.writeFileSync(evil, `#!/bin/sh\ntouch ${traps}/fired-"$(basename "$0")"-$$\ncat\n`, { mode: 0o755 });
    const hooks = path.join(traps, "hooks");
    fs.mkdirSync(hooks);
    for (const hook of ["pre-commit", "post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc"]) fs.symlinkSync(evil, path.join(hooks, hook));
    rig.ws.file(".gitattributes", "* filter=evil diff=evil\n");
    const set = (key: string, value: string) => git(rig.ws.dir, "config", key, value);
    set("core.fsmonitor", evil);
    set("core.hooksPath", hooks);
    set("filter.evil.clean", evil);
    set("filter.evil.smudge", evil);
    set("filter.evil.process", evil);
    set("filter.evil.required", "true");
    set("diff.evil.textconv", evil);
    const fired = () => fs.readdirSync(traps).filter((n) => n.startsWith("fired-"));
    // The trap is armed: ordinary git runs the repository's programs.
    try {
      git(rig.ws.dir, "add", "-A");
    } catch {
      // the filter's output is no valid answer to git: it fails, after running it
    }
    expect(fired().length).toBeGreaterThan(0);
    for (const f of fired()) fs.rmSync(path.join(traps, f));

    const c = await rig.bridge();
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    expect((await rig.events(c, "s")).filter((e) => e.type === "checkpoint").map((e) => e.data.kind)).toEqual(["git", "git", "git"]);
    // The committed files were kept as references to their blobs: the rewind reads them back
    // from the repository (git cat-file), whose filters, textconv, fsmonitor and hooks are armed.
    const journal = fs.readFileSync(path.join(rig.root, workspaceFolderName(rig.ws.dir), "s.checkpoints", "journal.jsonl"), "utf8");
    const befores = journal.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.type === "turn").flatMap((r) => r.entries);
    const keepBefore = befores.find((e: any) => e.path === "keep.txt").before;
    expect(keepBefore.git).toBe(git(rig.ws.dir, "rev-parse", "HEAD:keep.txt").trim());
    expect(befores.find((e: any) => e.path === "doomed.txt").before.git).toBe(git(rig.ws.dir, "rev-parse", "HEAD:doomed.txt").trim());
    expect(fs.existsSync(path.join(rig.root, workspaceFolderName(rig.ws.dir), "s.checkpoints", "blobs", keepBefore.hash.slice(0, 2), keepBefore.hash))).toBe(false);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result.conflicts).toEqual([]);
    expect(result.restored).toEqual(["doomed.txt", "keep.txt"]);
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("doomed.txt")).toBe("doomed\n");
    expect(rig.read("made.txt")).toBeUndefined();
    expect(fired()).toEqual([]);
  });
});

describe("a partial clone whose promisor remote would run a program", () => {
  /** Makes the repository a partial clone whose promisor remote's transport runs `evil` (what a lazy fetch of a missing object would do). */
  function promisor(dir: string, evil: string): void {
    const set = (key: string, value: string) => git(dir, "config", key, value);
    set("core.repositoryFormatVersion", "1");
    set("extensions.partialClone", "evil");
    set("remote.evil.url", `ext::${evil} %S`);
    set("remote.evil.promisor", "true");
    set("protocol.ext.allow", "always");
  }

  function armed(dir: string, traps: string, fired: () => string[]): void {
    // Plain git, asked for a missing object, fetches it from the promisor: the program runs.
    try {
      git(dir, "cat-file", "blob", "1234567890123456789012345678901234567890");
    } catch {
      // the fetch fails, after running it
    }
    expect(fired().length).toBeGreaterThan(0);
    for (const f of fired()) fs.rmSync(path.join(traps, f));
  }

  it("its contents are copied, never referenced, and neither checkpointing nor a rewind fires it", async () => {
    rig = new Rig(true);
    const traps = outsideDir();
    const evil = path.join(traps, "evil.sh");
    fs.writeFileSync(evil, `#!/bin/sh\ntouch ${traps}/fired-$$\nexit 1\n`, { mode: 0o755 });
    const fired = () => fs.readdirSync(traps).filter((n) => n.startsWith("fired-"));
    promisor(rig.ws.dir, evil);
    armed(rig.ws.dir, traps, fired);
    const c = await rig.bridge();
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    const blobs = path.join(rig.store(), "blobs");
    const kept = fs.readdirSync(blobs).flatMap((sub) => fs.readdirSync(path.join(blobs, sub)).map((n) => fs.readFileSync(path.join(blobs, sub, n), "utf8")));
    expect(kept).toEqual(expect.arrayContaining(["original\n", "doomed\n"]));
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toMatchObject({ restored: ["doomed.txt", "keep.txt"], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(fired()).toEqual([]);
  });

  it("a repository that became one after the checkpoint is not read back: its references are reported unrestored, and nothing fires", async () => {
    rig = new Rig(true);
    const traps = outsideDir();
    const evil = path.join(traps, "evil.sh");
    fs.writeFileSync(evil, `#!/bin/sh\ntouch ${traps}/fired-$$\nexit 1\n`, { mode: 0o755 });
    const fired = () => fs.readdirSync(traps).filter((n) => n.startsWith("fired-"));
    const c = await rig.bridge(turns([{ toolCalls: [{ name: "bash", arguments: { command: "rm doomed.txt && echo made > made.txt" } }] }, { text: "one" }]));
    await rig.prompt(c, "s");
    promisor(rig.ws.dir, evil);
    const id = git(rig.ws.dir, "rev-parse", "HEAD:doomed.txt").trim();
    fs.rmSync(path.join(rig.ws.dir, ".git", "objects", id.slice(0, 2), id.slice(2)));
    armed(rig.ws.dir, traps, fired);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: [], removed: ["made.txt"], conflicts: [], unrestored: [{ turn: 1, tools: [], paths: ["doomed.txt"] }] });
    expect(fired()).toEqual([]);
  });
});

describe("the checkpoint store", () => {
  it("skips what passes the size cap with a checkpoint/skipped event, and reports it as unrestored", async () => {
    rig = new Rig(false);
    rig.ws.file("keep.txt", "an original that is longer than the cap\n");
    const c = await rig.bridge(undefined, { ...process.env, HARNESS_CHECKPOINT_MAX_BYTES: "16" });
    await rig.prompt(c, "s");
    const events = await rig.events(c, "s");
    expect(events.filter((e) => e.type === "checkpoint/skipped").map((e) => e.data)).toEqual([{ turn: 1, paths: ["keep.txt"], reason: "size-cap" }]);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: [], removed: ["new.txt"], conflicts: [], unrestored: [{ turn: 1, tools: [], paths: ["keep.txt"] }] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
  });

  it("a hand-edited journal's ill-formed records (a huge or missing lastTurn, non-boolean flags, a kind or tool that is no string) are left out", async () => {
    rig = new Rig(false);
    const c = await rig.bridge();
    for (let t = 1; t <= 3; t++) await rig.prompt(c, "s");
    const bad = [
      // Taken as a rewind cutting turns 2…1e300: a loop that never ends (or a Set past its size).
      { type: "rewind", turn: 2, lastTurn: 1e300, files: false, conversation: true, states: [] },
      { type: "rewind", turn: 2, files: true, conversation: false, states: [] },
      { type: "rewind", turn: 1, lastTurn: 3, files: "yes", conversation: 0, states: [] },
      { type: "turn", turn: 3, kind: "evil", entries: [], uncovered: [42, { x: 1 }], skipped: [] },
      { type: "turn", turn: 3, kind: "files", entries: [], uncovered: ["bash"], skipped: ["../outside", 7] },
    ];
    fs.appendFileSync(path.join(rig.store(), "journal.jsonl"), bad.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const frame = await rig.call(c, "session/rewind", { sessionId: "s", turn: 2 });
    expect(frame.error).toBeUndefined();
    // As if the lines were not there: turn 2's edit is undone, turn 3's bash is not covered.
    expect(frame.result).toEqual({ restored: ["keep.txt"], removed: [], conflicts: [], unrestored: [{ turn: 3, tools: ["bash"], paths: [] }] });
    expect(rig.read("keep.txt")).toBe("turn1\n");
  });

  it("is private: folders 0700 and files 0600 whatever the umask, beside the session log", async () => {
    rig = new Rig(true);
    // Untracked: its content is copied into the store (a committed one is a reference to its blob).
    rig.ws.file("untracked.txt", "not in the repository\n");
    const c = await rig.bridge();
    await rig.prompt(c, "s");
    const store = path.join(rig.root, workspaceFolderName(rig.ws.dir), "s.checkpoints");
    const modes: string[] = [];
    const walk = (p: string) => {
      const st = fs.lstatSync(p);
      modes.push(`${st.isDirectory() ? "d" : "f"}${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n));
    };
    walk(store);
    expect(modes.length).toBeGreaterThan(3);
    expect(new Set(modes)).toEqual(new Set(["d700", "f600"]));
    // Deleting the session deletes its checkpoints.
    expect((await rig.ok(c, "session/delete", { sessionId: "s" })).deleted).toBe(true);
    expect(fs.existsSync(store)).toBe(false);
  });
});

describe("full permission mode", () => {
  it("a file tool's write outside the workspace is never restored, and the turn says it is not covered", async () => {
    rig = new Rig(false);
    const outside = outsideDir();
    const target = path.join(outside, "out.txt");
    const script = turns([{ toolCalls: [{ name: "write_file", arguments: { path: target, content: "written\n" } }] }, { text: "one" }]);
    const c = await rig.bridge(script, process.env, { permissionMode: "full" });
    await rig.prompt(c, "s");
    expect(fs.readFileSync(target, "utf8")).toBe("written\n");
    expect((await rig.events(c, "s")).filter((e) => e.type === "checkpoint").map((e) => e.data)).toEqual([{ turn: 1, files: 0, kind: "files", uncovered: ["write_file"] }]);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: [], removed: [], conflicts: [], unrestored: [{ turn: 1, tools: ["write_file"], paths: [] }] });
    expect(fs.readFileSync(target, "utf8")).toBe("written\n");
  });
});
