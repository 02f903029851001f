/**
 * A process whose announcements could not all be written (process-activity.ts `lost`): a full
 * disk that cuts a line short (the next line, glued to the piece, was lost with it), a folder
 * that could not be made when a watch started (its later lines named a watch never started).
 * Either way another process's rewind did not note what the watch's tools changed. Once an
 * append can write again, the watches it may concern are announced whole.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { Stamp } from "../../src/agent/checkpoints/activity-lines.js";
import { SELF } from "../../src/agent/store/process-owner.js";

/** Set by a test: the next append writes this many bytes of its line, then fails as a full disk does. */
let cutAfter: number | undefined;
vi.mock("../../src/agent/store/log-format.js", async (original) => {
  const real = await original<typeof import("../../src/agent/store/log-format.js")>();
  return {
    ...real,
    writeAll(fd: number, data: string | Buffer): number {
      if (cutAfter === undefined) return real.writeAll(fd, data);
      fs.writeSync(fd, Buffer.from(data).subarray(0, cutAfter));
      cutAfter = undefined;
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    },
  };
});
const { ProcessActivity } = await import("../../src/agent/checkpoints/process-activity.js");

let base: string;
let folder: string;
const at = (ms: number): Stamp => ({ m: 1_000_000 + ms, t: 1_700_000_000_000 + ms, boot: SELF.boot! });
const now = () => at(50);
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), "hb-activity-lost-"));
  folder = path.join(base, "root", "activity");
});
afterEach(() => {
  cutAfter = undefined;
  fs.rmSync(base, { recursive: true, force: true });
});

it("a line cut short by a full disk: the lines after it still count, and the watch is taken whole", () => {
  const a = new ProcessActivity(folder, now);
  const b = new ProcessActivity(folder, now);
  const id = b.begin("/ws", false, at(0));
  cutAfter = 20;
  b.willRun(id, "/ws/cut.txt"); // its line torn
  b.willRun(id, "/ws/after.txt"); // glued to the piece, it was lost with it
  b.willRun(id, undefined); // a bash
  b.end(id, at(10));
  const seen = a.during(at(5), at(100));
  expect(seen).toHaveLength(1);
  expect(seen[0]).toMatchObject({ root: "/ws", opaque: true });
  expect(seen[0].wrote).toContain("/ws/after.txt");
  // Ended in the file: a later window does not see it.
  expect(a.during(at(20), at(100))).toEqual([]);
});

it("the folder could not be made when the watch started: its start is announced with its next line", () => {
  fs.writeFileSync(path.join(base, "root"), "a file where the session root's folder goes");
  const a = new ProcessActivity(folder, now);
  const b = new ProcessActivity(folder, now);
  const id = b.begin("/ws", false, at(0)); // ENOTDIR: nothing written
  fs.rmSync(path.join(base, "root"));
  b.willRun(id, "/ws/x.txt");
  expect(a.during(at(5), at(100))).toEqual([{ root: "/ws", full: false, opaque: true, wrote: ["/ws/x.txt"] }]);
});

it("a watch whose every line failed is announced, ended, by the process's next append", () => {
  const a = new ProcessActivity(folder, now);
  const b = new ProcessActivity(folder, now);
  b.willRun(b.begin("/ws", false, at(0)), "/ws/first"); // the file is made
  cutAfter = 0;
  const lostWatch = b.begin("/ws", false, at(10));
  b.willRun(lostWatch, undefined);
  b.end(lostWatch, at(20));
  b.begin("/other", false, at(30)); // writes again
  const seen = a.during(at(15), at(100));
  expect(seen).toContainEqual({ root: "/ws", full: false, opaque: true, wrote: [] });
  expect(a.during(at(25), at(100)).map((w) => w.root).sort()).toEqual(["/other", "/ws"]); // the first, still open
});
