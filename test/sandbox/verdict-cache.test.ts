/**
 * The remembered Landlock verdict's file is hostile input (src/sandbox/verdict-cache.ts): only
 * a regular file of this uid, closed to others, small, well-formed and for exactly this key is
 * read; everything else is a miss, never an exception or a hang. Written atomically, 0600.
 * In-process and quick, so CI runs it again as `nobody` (.ci/run).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { failedForWantOfDescriptors, noSandboxMessage } from "../../src/sandbox/status.js";
import { pruneVerdicts, recalledVerdict, rememberVerdict, verdictFile, verdictKey } from "../../src/sandbox/verdict-cache.js";
import { STALE_TEMP_MS } from "../../src/temp-name.js";
import { BASH_MAX_TIMEOUT_MS } from "../../src/tools/bash.js";

const KEY = "boot x\nhelper y";
let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-verdict-"));
  file = verdictFile(dir, KEY);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
const plant = (content: unknown, mode = 0o600) => fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content), { mode });
const valid = { format: 1, key: KEY, verdict: { abi: 77 } };

describe("the remembered Landlock verdict", () => {
  it("is written atomically, 0600, and read back for its key only", () => {
    rememberVerdict(dir, KEY, { abi: 5 });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual([path.basename(file)]);
    expect(recalledVerdict(dir, KEY)).toEqual({ abi: 5 });
    expect(recalledVerdict(dir, `${KEY}!`)).toBeUndefined();
    rememberVerdict(dir, KEY, { failure: "this kernel has no Landlock" });
    expect(recalledVerdict(dir, KEY)).toEqual({ failure: "this kernel has no Landlock" });
  });

  it("replaces whatever sits at its name (a link is replaced, its target untouched)", () => {
    const target = path.join(dir, "target");
    fs.writeFileSync(target, "keep");
    fs.symlinkSync(target, file);
    rememberVerdict(dir, KEY, { abi: 5 });
    expect(fs.lstatSync(file).isFile()).toBe(true);
    expect(fs.readFileSync(target, "utf8")).toBe("keep");
    expect(recalledVerdict(dir, KEY)).toEqual({ abi: 5 });
  });

  const hostile: [string, () => void][] = [
    ["no file", () => {}],
    ["a link to a valid file", () => {
      fs.writeFileSync(path.join(dir, "elsewhere"), JSON.stringify(valid), { mode: 0o600 });
      fs.symlinkSync(path.join(dir, "elsewhere"), file);
    }],
    ["a FIFO (no writer: reading it would block)", () => execFileSync("mkfifo", ["-m", "600", file])],
    ["a folder", () => fs.mkdirSync(file, { mode: 0o700 })],
    ["a file others can read or write", () => plant(valid, 0o644)],
    ["a file over 64 KiB", () => plant(JSON.stringify(valid) + " ".repeat(70_000))],
    ["garbage", () => plant(Buffer.from([0xff, 0x00, 0x7b, 0x22, 0xfe]).toString("latin1"))],
    ["empty", () => plant("")],
    ["JSON that is not an object", () => plant("[1,2]")],
    ["another key's verdict", () => plant({ ...valid, key: "boot z\nhelper y" })],
    ["another format", () => plant({ ...valid, format: 2 })],
    ["an ABI that is not a small positive integer", () => plant({ ...valid, verdict: { abi: "77" } })],
    ["an ABI of 0", () => plant({ ...valid, verdict: { abi: 0 } })],
    ["a verdict with more fields", () => plant({ ...valid, verdict: { abi: 77, failure: "x" } })],
    ["a failure with control characters", () => plant({ ...valid, verdict: { failure: "a\u001b[2Jb" } })],
    ["a failure over 1000 characters", () => plant({ ...valid, verdict: { failure: "x".repeat(1001) } })],
  ];
  it.each(hostile)("ignores %s", (_name, make) => {
    make();
    expect(recalledVerdict(dir, KEY)).toBeUndefined();
    // And a valid one is read (the check above is not vacuous).
    fs.rmSync(file, { recursive: true, force: true });
    plant(valid);
    expect(recalledVerdict(dir, KEY)).toEqual({ abi: 77 });
  });

  it.skipIf(process.getuid!() !== 0)("ignores a file owned by another user (as root)", () => {
    plant(valid);
    fs.chownSync(file, 65534, 65534);
    expect(recalledVerdict(dir, KEY)).toBeUndefined();
  });

  it("keeps one file per key, so that two keys do not overwrite each other's", () => {
    rememberVerdict(dir, KEY, { abi: 5 });
    rememberVerdict(dir, `${KEY}2`, { abi: 6 });
    expect(verdictFile(dir, `${KEY}2`)).not.toBe(file);
    expect([recalledVerdict(dir, KEY), recalledVerdict(dir, `${KEY}2`)]).toEqual([{ abi: 5 }, { abi: 6 }]);
  });

  it("names different keys differently: a change of any one character, a longer key, a non-ASCII one", () => {
    const keys = [KEY, `${KEY}\0`, `${KEY}\0\0\0\0`, `${KEY}é`, `${KEY}e`];
    for (let i = 0; i < 8; i++) keys.push(`${KEY.slice(0, i)}${String.fromCharCode(KEY.charCodeAt(i) ^ 0x40)}${KEY.slice(i + 1)}`);
    expect(new Set(keys.map((k) => verdictFile(dir, k))).size).toBe(keys.length);
  });

  it("prunes the files not rewritten for a day, and nothing else", async () => {
    rememberVerdict(dir, KEY, { abi: 5 });
    rememberVerdict(dir, `${KEY}2`, { abi: 6 });
    fs.writeFileSync(path.join(dir, "landlock-exec-0123"), "");
    const old = new Date(Date.now() - 25 * 60 * 60 * 1000);
    fs.utimesSync(file, old, old);
    fs.utimesSync(path.join(dir, "landlock-exec-0123"), old, old);
    await pruneVerdicts(dir);
    expect(fs.readdirSync(dir).sort()).toEqual(["landlock-exec-0123", path.basename(verdictFile(dir, `${KEY}2`))].sort());
  });

  it("writes under a name of its own: another writer's temporary, even one of this pid (a bridge of another PID namespace), is left alone", () => {
    // Where a bridge with the same pid (another container on this folder) is writing this very
    // verdict: the names a pid and a count made before.
    const theirs = Array.from({ length: 50 }, (_, i) => `${file}.${process.pid}.${i + 1}`);
    for (const name of theirs) fs.writeFileSync(name, "half of another bridge's write", { mode: 0o600 });
    rememberVerdict(dir, KEY, { abi: 5 });
    expect(recalledVerdict(dir, KEY)).toEqual({ abi: 5 });
    for (const name of theirs) expect(fs.readFileSync(name, "utf8")).toBe("half of another bridge's write");
  });

  it("prunes the temporaries a killed writer left once they are an hour old, and keeps young ones", async () => {
    rememberVerdict(dir, KEY, { abi: 5 });
    const base = path.basename(file);
    const names = {
      staleVerdict: `${base}.tmp-4242-0123456789ab`,
      staleHelper: "landlock-exec-0123456789abcdef.tmp-7-00000000cafe",
      stalePrune: `${base}.tmp-1-0000000000ff`,
      youngVerdict: `${base}.tmp-4242-0123456789ac`,
      youngHelper: "landlock-exec-0123456789abcdef.tmp-7-00000000beef",
    };
    const twoHours = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const minutes = new Date(Date.now() - 50 * 60 * 1000);
    for (const [what, name] of Object.entries(names)) {
      fs.writeFileSync(path.join(dir, name), "x", { mode: 0o600 });
      const when = what.startsWith("stale") ? twoHours : minutes;
      fs.utimesSync(path.join(dir, name), when, when);
    }
    await pruneVerdicts(dir);
    expect(fs.readdirSync(dir).sort()).toEqual([base, names.youngVerdict, names.youngHelper].sort());
    expect(recalledVerdict(dir, KEY)).toEqual({ abi: 5 });
  });

  it("prunes the commands' temporary folders a killed bridge left once an hour old, and keeps young ones", async () => {
    // A command's folder lives no longer than its command, and commands end long before that.
    expect(BASH_MAX_TIMEOUT_MS).toBeLessThan(STALE_TEMP_MS / 2);
    const stale = path.join(dir, "tmp-AbC123");
    const young = path.join(dir, "tmp-XyZ789");
    for (const folder of [stale, young]) {
      fs.mkdirSync(path.join(folder, "build"), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(folder, "build", "out.o"), "what the command wrote");
    }
    const twoHours = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const minutes = new Date(Date.now() - 50 * 60 * 1000);
    fs.utimesSync(stale, twoHours, twoHours);
    fs.utimesSync(young, minutes, minutes);
    await pruneVerdicts(dir);
    expect(fs.readdirSync(dir)).toEqual(["tmp-XyZ789"]);
    expect(fs.readFileSync(path.join(young, "build", "out.o"), "utf8")).toBe("what the command wrote");
  });

  it("prunes off the caller's turn: nothing is touched until its promise settles, and a missing folder is no error", async () => {
    const old = new Date(Date.now() - 25 * 60 * 60 * 1000);
    for (let i = 0; i < 20; i++) {
      rememberVerdict(dir, `${KEY}${i}`, { abi: 5 });
      fs.utimesSync(verdictFile(dir, `${KEY}${i}`), old, old);
    }
    const pruning = pruneVerdicts(dir);
    expect(fs.readdirSync(dir)).toHaveLength(20);
    await pruning;
    expect(fs.readdirSync(dir)).toEqual([]);
    await expect(pruneVerdicts(path.join(dir, "absent"))).resolves.toBeUndefined();
  });

  it("does not remember a malformed verdict: it forgets the old one instead", () => {
    rememberVerdict(dir, KEY, { abi: 5 });
    rememberVerdict(dir, KEY, { failure: "" });
    expect(fs.existsSync(file)).toBe(false);
  });

  it("does not remember a refusal for want of file descriptors, in Node's words or a program's: it forgets the old one", () => {
    // The helper and bubblewrap report errno in strerror's words; a spawn in Node's code.
    const starved = [
      "landlock-exec: creating the Landlock ruleset: Too many open files",
      "landlock-exec: /usr: Too many open files in system",
      "its helper did not run (could not start it: EMFILE)",
    ];
    for (const failure of starved) {
      expect(failedForWantOfDescriptors(failure), failure).toBe(true);
      expect(noSandboxMessage(failure), failure).not.toMatch(/install bubblewrap/);
      rememberVerdict(dir, KEY, { abi: 5 });
      rememberVerdict(dir, KEY, { failure });
      expect(fs.existsSync(file), failure).toBe(false);
    }
    expect(failedForWantOfDescriptors("landlock-exec: landlock_restrict_self: Operation not permitted")).toBe(false);
  });

  it("keys on the helper, the rules and the process's context", () => {
    const key = verdictKey("sha", ["--ro", "/usr"])!;
    expect(key).toBe(verdictKey("sha", ["--ro", "/usr"]));
    expect(key).not.toBe(verdictKey("sha2", ["--ro", "/usr"]));
    expect(key).not.toBe(verdictKey("sha", ["--ro", "/usr", "--ro", "/opt"]));
    for (const part of ["boot ", "exe ", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:", "CapEff:", "Uid:", "Groups:", "user user:[", "mnt mnt:[", "pid pid:[", "net net:["]) {
      expect(key).toContain(part);
    }
  });
});
