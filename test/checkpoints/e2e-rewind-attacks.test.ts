/**
 * Checkpoints against a hostile workspace, through the binary: a symbolic link the model
 * planted where a file it wrote was (never written through, a conflict unless force); a rewind
 * racing a process that swaps a folder for a link out of the workspace (nothing outside is
 * written or removed); a git repository whose own config would run code (core.fsmonitor,
 * core.hooksPath, a clean/smudge/process filter through .gitattributes, a textconv) — proven
 * armed with plain git, and never fired by checkpoints or a rewind; the size cap's
 * `checkpoint/skipped`; the store's private modes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { turns } from "../support/scripts.js";
import { Rig, git } from "./rewind-support.js";

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
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result.conflicts).toEqual([]);
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("doomed.txt")).toBe("doomed\n");
    expect(rig.read("made.txt")).toBeUndefined();
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

  it("is private: folders 0700 and files 0600 whatever the umask, beside the session log", async () => {
    rig = new Rig(true);
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
