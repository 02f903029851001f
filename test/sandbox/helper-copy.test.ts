/**
 * The Landlock helper's copy in the private folder (src/sandbox/landlock-helper.ts) is written
 * under a name of this write's own: bridges of other PID namespaces share the folder (containers
 * on one volume) and often have the same pid, so a name made of the pid and the time alone was
 * someone else's write in progress — and the copy failed with EEXIST, or took the other's bytes.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { helperIdentity, privateFolder, verifiedHelper } from "../../src/sandbox/landlock-helper.js";

let tmp: string;
const savedTmpdir = process.env.TMPDIR;
beforeEach(() => {
  // A private folder of this test's own: the uid's shared one serves the other test files too.
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-helper-copy-"));
  process.env.TMPDIR = tmp;
});
afterEach(() => {
  vi.restoreAllMocks();
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("the helper's copy", () => {
  it.runIf(process.platform === "linux")("is written beside another bridge's copy in progress of the same pid and time, which it leaves alone", () => {
    const sha = helperIdentity();
    expect(sha).toBeDefined();
    const target = path.join(privateFolder(), `landlock-exec-${sha!.slice(0, 16)}`);
    // Another bridge with this pid, in the same millisecond, is writing its copy.
    const now = 1_700_000_000_000;
    vi.spyOn(Date, "now").mockReturnValue(now);
    const theirs = `${target}.${process.pid}.${now}`;
    fs.writeFileSync(theirs, "half of another bridge's copy", { mode: 0o700 });
    const helper = verifiedHelper();
    expect(helper).toBe(target);
    expect(fs.readFileSync(helper).subarray(0, 4)).toEqual(Buffer.from("\x7fELF"));
    expect(fs.readFileSync(theirs, "utf8")).toBe("half of another bridge's copy");
    // Nothing of its own is left beside it.
    expect(fs.readdirSync(path.dirname(target)).sort()).toEqual([path.basename(target), path.basename(theirs)].sort());
  });
});
