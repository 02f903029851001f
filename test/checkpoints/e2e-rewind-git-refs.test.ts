/**
 * Git checkpoints keep committed contents as references to the repository's blobs, through the
 * binary: in a work tree of committed files (SHA-1 and SHA-256 repositories), a turn that edits
 * a committed file, edits a modified one and has bash delete a third leaves a store the size of
 * what is not in the repository (the modified file's bytes, an untracked file), not the tree's;
 * a second turn deleting a fourth adds only what turn 1 left modified; and a rewind restores
 * all four exactly (content and mode). A blob deleted from the object
 * store after the checkpoint leaves its path not restored, the rest restored; an index entry
 * whose blob the repository never held is copied instead. A path whose name is not UTF-8 (no
 * string names it) is never kept: one a turn changes is reported as not kept and not
 * restored, never silently left as if the rewind had put it back.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { turns } from "../support/scripts.js";
import { Rig, git } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

/** Bytes of the files under `dir` (recursively), `.git` left out. */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === ".git") continue;
    const p = path.join(dir, entry.name);
    total += entry.isDirectory() ? bytesUnder(p) : fs.lstatSync(p).size;
  }
  return total;
}

/** The contents kept in the session's store (`blobs/`). */
function storedContents(store: string): string[] {
  const blobs = path.join(store, "blobs");
  if (!fs.existsSync(blobs)) return [];
  return fs.readdirSync(blobs).flatMap((sub) => fs.readdirSync(path.join(blobs, sub)).map((n) => fs.readFileSync(path.join(blobs, sub, n), "utf8")));
}

describe.each(["sha1", "sha256"])("a git work tree of committed files (%s objects)", (format) => {
  it("a turn edits one file and bash deletes another: the store holds what changed, not the tree, and a rewind restores both exactly", async () => {
    const original = (i: number) => `${`line of file ${i}\n`.repeat(200)}end of file ${i}\n`;
    rig = new Rig(true, "hb-rewind-refs-", {
      initArgs: [`--object-format=${format}`],
      setup: (ws) => {
        for (let i = 0; i < 100; i++) ws.file(`src/f${i}.txt`, original(i));
        fs.chmodSync(path.join(ws.dir, "src/f1.txt"), 0o755);
      },
    });
    expect(git(rig.ws.dir, "ls-files", "-s", "src/f0.txt").split(" ")[1]).toHaveLength(format === "sha1" ? 40 : 64);
    // Not in the repository: a modified tracked file and an untracked one. Only they are copied.
    const dirty = "modified, not committed\n";
    const untracked = "untracked notes\n";
    rig.ws.file("src/f2.txt", dirty);
    rig.ws.file("notes.txt", untracked);
    const script = turns(
      [
        {
          toolCalls: [
            { name: "edit_file", arguments: { path: "src/f0.txt", oldText: "end of file 0", newText: "EDITED" } },
            { name: "write_file", arguments: { path: "src/f2.txt", content: "rewritten\n" } },
            { name: "bash", arguments: { command: "rm src/f1.txt" } },
          ],
        },
        { text: "one" },
      ],
      [{ toolCalls: [{ name: "bash", arguments: { command: "rm src/f3.txt" } }] }, { text: "two" }],
    );
    const c = await rig.bridge(script);
    await rig.prompt(c, "s");
    expect(rig.read("src/f1.txt")).toBeUndefined();
    expect((await rig.events(c, "s")).filter((e) => e.type === "checkpoint").map((e) => e.data)).toEqual([{ turn: 1, files: 3, kind: "git" }]);

    const tree = bytesUnder(rig.ws.dir);
    const store = bytesUnder(rig.store());
    expect(tree).toBeGreaterThan(90 * original(10).length);
    // The store: the two contents that are not in the repository, and the journal.
    expect(storedContents(rig.store()).sort()).toEqual([dirty, untracked].sort());
    expect(store).toBeLessThan(tree / 20);
    // A later turn copies only what turn 1 left modified (not in the repository either), not
    // the file it deletes: its snapshot knows each unchanged file's blob.
    await rig.prompt(c, "s");
    expect(rig.read("src/f3.txt")).toBeUndefined();
    expect(storedContents(rig.store()).sort()).toEqual([dirty, untracked, original(0).replace("end of file 0", "EDITED"), "rewritten\n"].sort());

    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: ["src/f0.txt", "src/f1.txt", "src/f2.txt", "src/f3.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(fs.readFileSync(path.join(rig.ws.dir, "src/f3.txt")).equals(Buffer.from(original(3)))).toBe(true);
    expect(fs.readFileSync(path.join(rig.ws.dir, "src/f0.txt")).equals(Buffer.from(original(0)))).toBe(true);
    expect(fs.readFileSync(path.join(rig.ws.dir, "src/f1.txt")).equals(Buffer.from(original(1)))).toBe(true);
    expect(fs.statSync(path.join(rig.ws.dir, "src/f1.txt")).mode & 0o777).toBe(0o755);
    expect(rig.read("src/f2.txt")).toBe(dirty);
    expect(rig.read("notes.txt")).toBe(untracked);
    // Nothing of the repository was written: the index still holds what was committed.
    expect(git(rig.ws.dir, "status", "--porcelain")).toBe(" M src/f2.txt\n?? notes.txt\n");
  });
});

describe("blobs the repository does not hold", () => {
  it("a referenced blob deleted after the checkpoint leaves its path not restored, and the rest is restored", async () => {
    rig = new Rig(true);
    const script = turns(
      [
        {
          toolCalls: [
            { name: "write_file", arguments: { path: "keep.txt", content: "turn1\n" } },
            { name: "bash", arguments: { command: "rm doomed.txt && echo made > made.txt" } },
          ],
        },
        { text: "one" },
      ],
    );
    const c = await rig.bridge(script);
    await rig.prompt(c, "s");
    // The user's gc pruned it: here, the loose object is deleted.
    const id = git(rig.ws.dir, "rev-parse", "HEAD:doomed.txt").trim();
    fs.rmSync(path.join(rig.ws.dir, ".git", "objects", id.slice(0, 2), id.slice(2)));
    expect(() => git(rig.ws.dir, "cat-file", "-e", id)).toThrow();
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: ["keep.txt"], removed: ["made.txt"], conflicts: [], unrestored: [{ turn: 1, tools: [], paths: ["doomed.txt"] }] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("made.txt")).toBeUndefined();
    expect(rig.read("doomed.txt")).toBeUndefined();
    // The session goes on.
    expect((await rig.ok(c, "session/list", {})).sessions).toHaveLength(1);
  });

  it("an index entry naming a blob the repository never held is copied instead, and restored", async () => {
    rig = new Rig(true);
    // The index says ghost.txt is this content, but the object was never written (a crafted or damaged index).
    rig.ws.file("ghost.txt", "ghost\n");
    const id = git(rig.ws.dir, "hash-object", "ghost.txt").trim();
    git(rig.ws.dir, "update-index", "--add", "--cacheinfo", `100644,${id},ghost.txt`);
    expect(() => git(rig.ws.dir, "cat-file", "-e", id)).toThrow();
    const c = await rig.bridge(turns([{ toolCalls: [{ name: "bash", arguments: { command: "rm ghost.txt keep.txt" } }] }, { text: "one" }]));
    await rig.prompt(c, "s");
    expect(storedContents(rig.store())).toEqual(["ghost\n"]);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: ["ghost.txt", "keep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("ghost.txt")).toBe("ghost\n");
    expect(rig.read("keep.txt")).toBe("original\n");
  });
});

describe("paths whose names are not UTF-8", () => {
  const raw = (rel: string) => Buffer.concat([Buffer.from(`${rig.ws.dir}/`), Buffer.from(rel, "latin1")]);
  const LOSSY = "caf\uFFFD.txt"; // "caf\xe9.txt" as UTF-8 text

  it("one a turn changed is checkpoint/skipped 'unreadable' and unrestored; one it did not change is not named; the rest is restored", async () => {
    rig = new Rig(true);
    fs.writeFileSync(raw("old\xff.txt"), "left alone\n");
    const script = turns([{ toolCalls: [{ name: "bash", arguments: { command: "printf 'made\\n' > \"$(printf 'caf\\351.txt')\" && rm doomed.txt" } }] }, { text: "one" }]);
    const c = await rig.bridge(script);
    await rig.prompt(c, "s");
    expect(fs.readFileSync(raw("caf\xe9.txt"), "utf8")).toBe("made\n");
    const events = await rig.events(c, "s");
    expect(events.filter((e) => e.type === "checkpoint/skipped").map((e) => e.data)).toEqual([{ turn: 1, paths: [LOSSY], reason: "unreadable" }]);
    expect(events.filter((e) => e.type === "checkpoint").map((e) => e.data)).toEqual([{ turn: 1, files: 2, kind: "git" }]);
    const result = await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1 });
    expect(result).toEqual({ restored: ["doomed.txt"], removed: [], conflicts: [], unrestored: [{ turn: 1, tools: [], paths: [LOSSY] }] });
    expect(rig.read("doomed.txt")).toBe("doomed\n");
    // Not restored, as said: the file bash made is still there, and the untouched one too.
    expect(fs.readFileSync(raw("caf\xe9.txt"), "utf8")).toBe("made\n");
    expect(fs.readFileSync(raw("old\xff.txt"), "utf8")).toBe("left alone\n");
  });
});
