/**
 * Other processes' watches, as one process sees them through the activity folder
 * (process-activity.ts, activity-lines.ts). Two `ProcessActivity` of one folder are two
 * processes here (each its own file; this test's pid, alive); a dead one is a file written by
 * hand with the owner line of a pid that has exited. Clocks are injected: a stamp is what the
 * test says it is.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { overlaps, parseActivity, surelyBefore, WALL_SLACK_MS, watchLine, type Stamp } from "../../src/agent/checkpoints/activity-lines.js";
import { COMPACT_BYTES, GRACE_MS, ProcessActivity } from "../../src/agent/checkpoints/process-activity.js";
import { SELF } from "../../src/agent/store/process-owner.js";

/** This machine's boot: what the owner lines the processes write name. */
const BOOT = SELF.boot!;
let folder: string;
let clock: Stamp;
const now = () => clock;
/** `ms` after the test's start on both clocks. */
const at = (ms: number): Stamp => ({ m: 1_000_000 + ms, t: 1_700_000_000_000 + ms, boot: BOOT });
const process_ = () => new ProcessActivity(folder, now);
const files = () => fs.readdirSync(folder).sort();
const text = (name: string) => fs.readFileSync(path.join(folder, name), "utf8");

beforeEach(() => {
  folder = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "hb-activity-")), "activity");
  clock = at(0);
});
afterEach(() => fs.rmSync(path.dirname(folder), { recursive: true, force: true }));

/** A file as a process that has exited left it: its owner line, then `lines`. */
function deadProcessFile(lines: string[]): string {
  const pid = spawnSync("true").pid!;
  const file = path.join(folder, `${pid}-dead.activity`);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ ...SELF, pid, boot: BOOT })}\n${lines.join("")}`);
  return file;
}

describe("another process's watches in a turn's window", () => {
  it("an open watch's writes are noted; a watch that ended before the window, or started after it, is not", () => {
    const a = process_();
    const b = process_();
    const old = b.begin("/ws", false, at(0));
    b.willRun(old, "/ws/old.txt");
    b.end(old, at(10));
    expect(a.during(at(20), at(100))).toEqual([]);
    const mid = b.begin("/ws", false, at(30));
    b.willRun(mid, "/ws/mid.txt");
    b.begin("/ws", false, at(200));
    expect(a.during(at(20), at(100))).toEqual([{ root: "/ws", full: false, opaque: false, wrote: ["/ws/mid.txt"] }]);
    // Ended inside the window: still noted (its write may be in the turn's record).
    b.end(mid, at(50));
    expect(a.during(at(20), at(100))).toHaveLength(1);
  });

  it("an opaque tool that started before the window and may still run: the whole watch", () => {
    const a = process_();
    const b = process_();
    const bash = b.begin("/repo", true, at(0));
    b.willRun(bash, undefined);
    expect(a.during(at(500), at(600))).toEqual([{ root: "/repo", full: true, opaque: true, wrote: [] }]);
  });

  it("a file a process is writing, and its own file, are not read; nothing is made before a watch starts", () => {
    const a = process_();
    expect(a.during(at(0), at(1))).toEqual([]);
    expect(fs.existsSync(folder)).toBe(false);
    const id = a.begin("/ws", false, at(0));
    a.willRun(id, undefined);
    expect(a.during(at(0), at(1))).toEqual([]);
    expect(files()).toHaveLength(1);
  });
});

describe("clocks", () => {
  it("one boot: the monotonic clock alone, whatever the wall clock did; another boot: the wall clock, with slack", () => {
    const before = at(0);
    const steppedBack = { ...at(10), t: before.t - 3_600_000 }; // later, though the wall clock went back an hour
    expect(surelyBefore(before, steppedBack)).toBe(true);
    expect(surelyBefore(steppedBack, before)).toBe(false);
    const elsewhere = { ...at(10), boot: "another-boot" };
    expect(surelyBefore(before, elsewhere)).toBe(false); // within the slack: in doubt
    expect(surelyBefore(before, { ...elsewhere, t: before.t + WALL_SLACK_MS + 1 })).toBe(true);
    expect(surelyBefore(before, { ...at(10), boot: "" })).toBe(false); // no boot id: the wall clock, in doubt
  });

  it("a watch that ended is taken to overlap a window unless it surely ended before it", () => {
    const watch = { root: "/ws", full: false, start: at(0), end: { ...at(100), boot: "other" }, all: true, paths: [], lines: [] };
    expect(overlaps(watch, undefined, at(101), at(200))).toBe(true);
    expect(overlaps(watch, undefined, at(100 + WALL_SLACK_MS + 1), at(WALL_SLACK_MS + 200))).toBe(false);
  });
});

describe("a process that is gone", () => {
  it("killed mid-watch: the first to find it writes `gone`, its open watch lasts until then, later windows do not see it", () => {
    const file = deadProcessFile([watchLine(1, at(0), { root: "/ws", full: false }), watchLine(1, at(5), { all: true })]);
    const a = process_();
    clock = at(1000);
    expect(a.during(at(900), at(1000))).toEqual([{ root: "/ws", full: false, opaque: true, wrote: [] }]);
    expect(parseActivity(fs.readFileSync(file, "utf8")).gone).toEqual(at(1000));
    clock = at(2000);
    expect(a.during(at(1500), at(2000))).toEqual([]);
    // A second finder keeps the first `gone`.
    expect(parseActivity(fs.readFileSync(file, "utf8")).gone).toEqual(at(1000));
  });

  it("its file goes once GRACE_MS old and no open watch, of this process or another, started before it went", () => {
    const file = deadProcessFile([watchLine(1, at(0), { root: "/ws", full: false }), watchLine(1, at(0), { all: true })]);
    const a = process_();
    const b = process_();
    const early = b.begin("/ws", false, at(500)); // open since before the death was found
    clock = at(1000);
    a.during(at(1000), at(1000));
    clock = at(1000 + GRACE_MS + 1);
    expect(a.during(clock, clock)).toEqual([{ root: "/ws", full: false, opaque: false, wrote: [] }]); // b's, not the dead one's
    expect(fs.existsSync(file)).toBe(true); // b's watch may still need it at its close
    b.end(early, clock);
    a.during(clock, clock);
    expect(fs.existsSync(file)).toBe(false);
  });

  it("a clean exit removes its file when no other process has one", () => {
    const a = process_();
    a.willRun(a.begin("/ws", false, at(0)), undefined);
    expect(files()).toHaveLength(1);
    a.leave();
    expect(files()).toEqual([]);
  });

  it("a clean exit with another process about: `gone`, and its open watch ends there", () => {
    const a = process_();
    const b = process_();
    b.begin("/ws", false, at(0));
    a.willRun(a.begin("/ws", false, at(0)), "/ws/x");
    clock = at(10);
    a.leave();
    const left = files().find((n) => text(n).includes("/ws/x"))!;
    expect(parseActivity(text(left)).gone).toEqual(at(10));
    expect(b.during(at(20), at(30))).toEqual([]);
    expect(b.during(at(5), at(30))).toEqual([{ root: "/ws", full: false, opaque: false, wrote: ["/ws/x"] }]);
  });
});

describe("files that are not what a bridge writes", () => {
  it("torn and foreign lines are left out; a file without an owner line goes once old", () => {
    fs.mkdirSync(folder);
    const live = path.join(folder, "live.activity");
    const lines = [
      watchLine(1, at(0), { root: "/ws", full: false }),
      `{"w":2,"m":1,"t":1,"path":"/ws/no-start"}\n`, // an event of a watch never started
      `{"w":1,"m":"x","t":1,"path":"/ws/bad-time"}\n`,
      `{"w":1,"m":1,"t":1,"path":"relative"}\n`,
      `not json\n`,
      watchLine(1, at(1), { path: "/ws/ok.txt" }),
      `{"w":1,"m":2,"t":2,"all":tr`, // torn
    ];
    fs.writeFileSync(live, `${JSON.stringify(SELF)}\n${lines.join("")}`);
    const junk = path.join(folder, "junk.activity");
    fs.writeFileSync(junk, "no owner\n");
    const a = process_();
    expect(a.during(at(0), at(10))).toEqual([{ root: "/ws", full: false, opaque: false, wrote: ["/ws/ok.txt"] }]);
    expect(fs.existsSync(junk)).toBe(true);
    const old = (Date.now() - GRACE_MS - 1000) / 1000;
    fs.utimesSync(junk, old, old);
    clock = { ...at(10), t: Date.now() };
    a.during(at(0), at(10));
    expect(fs.existsSync(junk)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
  });

  it("its own file removed by hand: made anew, its open watches announced whole", () => {
    const a = process_();
    const b = process_();
    const id = b.begin("/ws", false, at(0));
    b.willRun(id, "/ws/x");
    for (const name of files()) fs.rmSync(path.join(folder, name));
    b.during(at(0), at(1)); // b finds its file gone
    b.willRun(id, "/ws/y");
    expect(a.during(at(0), at(1))).toEqual([{ root: "/ws", full: false, opaque: true, wrote: ["/ws/y"] }]);
  });
});

describe("an activity folder that is a link", () => {
  it("nothing in the folder it names is removed, read or written, whatever lies there", () => {
    // A link planted as `activity` (or swapped in): every tidy-up goes by the folder's path.
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "hb-elsewhere-"));
    try {
      const old = (Date.now() - GRACE_MS - 60_000) / 1000;
      const plain = path.join(elsewhere, "thesis.tex"); // any file: removed as "not an activity file" once old
      const ownerless = path.join(elsewhere, "notes.activity");
      const pid = spawnSync("true").pid!; // a dead owner: `gone` appended, then removed
      const dead = path.join(elsewhere, `${pid}-x.activity`);
      fs.writeFileSync(plain, "work");
      fs.writeFileSync(ownerless, "work\n");
      fs.writeFileSync(dead, `${JSON.stringify({ ...SELF, pid })}\n${watchLine(1, at(0), { root: "/ws", full: false })}`);
      const before = fs.readFileSync(dead, "utf8");
      for (const f of [plain, ownerless, dead]) fs.utimesSync(f, old, old);
      fs.mkdirSync(path.dirname(folder), { recursive: true });
      fs.symlinkSync(elsewhere, folder);
      const a = process_();
      a.willRun(a.begin("/ws", false, at(0)), undefined); // refused to make its file there
      clock = { ...at(2 * GRACE_MS), t: Date.now() };
      expect(a.during(at(0), at(1))).toEqual([]);
      clock = { ...at(4 * GRACE_MS), t: Date.now() + 2 * GRACE_MS };
      a.during(at(0), at(1));
      expect(fs.readdirSync(elsewhere).sort()).toEqual([path.basename(dead), "notes.activity", "thesis.tex"].sort());
      expect(fs.readFileSync(dead, "utf8")).toBe(before);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe("compaction", () => {
  it("past COMPACT_BYTES, a process's file keeps its open watches and those an open watch elsewhere may need", () => {
    const a = process_();
    const b = process_();
    const long = `/ws/${"x".repeat(200)}`;
    const write = (id: number) => b.willRun(id, long);
    const old = b.begin("/ws", false, at(0));
    write(old);
    b.end(old, at(1));
    const open = a.begin("/ws", false, at(10_000)); // a's watch: b's watches that ended after it started matter to it
    let t = 20_000;
    while (fs.statSync(path.join(folder, files().find((n) => text(n).includes(long))!)).size <= COMPACT_BYTES) {
      const id = b.begin("/ws", false, at(t));
      write(id);
      b.end(id, at(t + 1));
      t += 10;
    }
    const kept = b.begin("/ws", false, at(t));
    const bFile = path.join(folder, files().find((n) => text(n).includes(long))!);
    const lines = fs.readFileSync(bFile, "utf8").split("\n").length;
    clock = at(t + 2 * GRACE_MS);
    b.during(clock, clock);
    const after = parseActivity(fs.readFileSync(bFile, "utf8"));
    expect(after.watches.has(old)).toBe(false);
    expect(after.watches.has(kept)).toBe(true);
    expect(after.watches.size).toBeGreaterThan(100); // ended after a's watch started
    // a's watch closed: the next compaction (once the file has grown again) keeps only what is open.
    a.end(open, clock);
    while (fs.readFileSync(bFile, "utf8").split("\n").length >= lines) {
      const id = b.begin("/ws", false, clock);
      write(id);
      b.end(id, clock);
      b.during(clock, clock);
    }
    clock = at(t + 4 * GRACE_MS);
    expect([...parseActivity(fs.readFileSync(bFile, "utf8")).watches.keys()]).toContain(kept);
    expect(a.during(at(t - 1), clock)).toEqual([{ root: "/ws", full: false, opaque: false, wrote: [] }]);
  });
});
