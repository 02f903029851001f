/**
 * Whether a process named by an owner line still runs (src/agent/store/process-owner.ts): the
 * session locks, their owner files and the checkpoint folders of killed bridges are removed or
 * taken over on that answer, so a live process must never be judged gone.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import { describe, expect, it } from "vitest";
import { procStat } from "../../src/tools/process-tree.js";
import * as path from "node:path";
import { alive, commandOf, SELF, seenHere, type ProcessOwner } from "../../src/agent/store/process-owner.js";

const dead = () => spawnSync("true").pid; // exited and reaped: no such process here

describe("an owner line's process", () => {
  it("of a pid namespace is never judged by a process that cannot tell its own (no /proc): it may run there", () => {
    // A container without /proc on a volume shared with one that has it: the owner's pid is
    // another namespace's, so its absence here proves nothing.
    const withoutProc: ProcessOwner = { pid: process.pid, start: "", host: os.hostname() };
    const owner: ProcessOwner = { pid: dead(), start: "", host: os.hostname(), pidns: SELF.pidns };
    expect(seenHere(owner, withoutProc)).toBe(false);
    expect(alive(owner, withoutProc)).toBe(true);
  });

  it("written without /proc (no namespace, no start time) is never judged by a process with /proc: it ran elsewhere", () => {
    expect(SELF.pidns).toBeDefined(); // this test machine has /proc
    const owner: ProcessOwner = { pid: dead(), start: "", host: os.hostname() };
    expect(seenHere(owner)).toBe(false);
    expect(alive(owner)).toBe(true);
    // Two processes without /proc (macOS, or one container) judge each other by pid.
    expect(alive(owner, { pid: process.pid, start: "", host: os.hostname() })).toBe(false);
  });

  it("of this namespace, or naming none but its start time (an older bridge, which read it from /proc), is judged by its pid", () => {
    const liveStart = (pid: number) => {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
      return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    };
    for (const pidns of [SELF.pidns, undefined]) {
      expect(alive({ pid: dead(), start: "12345", host: os.hostname(), pidns }), String(pidns)).toBe(false);
      expect(alive({ pid: process.ppid, start: liveStart(process.ppid), host: os.hostname(), pidns }), String(pidns)).toBe(true);
      expect(alive({ pid: process.ppid, start: "1", host: os.hostname(), pidns }), String(pidns)).toBe(false); // the pid reused
    }
    expect(alive({ pid: dead(), start: "", host: os.hostname(), pidns: SELF.pidns })).toBe(false);
    expect(alive({ pid: dead(), start: "", host: os.hostname(), pidns: "pid:[1]" })).toBe(true);
    expect(alive({ pid: dead(), start: "", host: "another-host" })).toBe(true);
  });

  it("of this boot is this machine's, whatever host name it wrote (renamed since, or a UTS namespace of its own)", () => {
    expect(SELF.boot).toMatch(/^[0-9a-f-]{36}$/);
    // A bridge run under `unshare -u` with another host name, killed: its lock is provably stale.
    expect(alive({ pid: dead(), start: "12345", host: "renamed-host", pidns: SELF.pidns, boot: SELF.boot })).toBe(false);
    expect(alive({ pid: process.ppid, start: "1", host: "renamed-host", pidns: SELF.pidns, boot: SELF.boot })).toBe(false);
    // Another boot under another name may be another machine (a folder on NFS): taken as alive, as before.
    expect(alive({ pid: dead(), start: "12345", host: "renamed-host", pidns: SELF.pidns, boot: "00000000-0000-0000-0000-000000000000" })).toBe(true);
    expect(alive({ pid: dead(), start: "12345", host: "renamed-host", pidns: "pid:[1]", boot: SELF.boot })).toBe(true);
  });

  it("that has exited but is not reaped yet (a zombie) is gone: its parent may never reap it", async () => {
    // sh starts a short sleep, prints its pid and becomes a long sleep, which never waits for it.
    const parent = spawn("sh", ["-c", "sleep 0.2 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      const pid = Number((await new Promise<Buffer>((resolve) => parent.stdout.once("data", resolve))).toString().trim());
      const owner: ProcessOwner = { pid, start: procStat(pid)!.start!, host: os.hostname(), pidns: SELF.pidns };
      expect(alive(owner)).toBe(true);
      const deadline = Date.now() + 10_000;
      while (procStat(pid)?.state !== "Z" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(procStat(pid)?.state).toBe("Z");
      expect(alive(owner)).toBe(false);
    } finally {
      parent.kill("SIGKILL");
    }
  });

  it("is named by its program (argv[0]), not by its main thread's name: node calls every thread of a bridge MainThread", async () => {
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    try {
      await new Promise((resolve) => child.once("spawn", resolve));
      const deadline = Date.now() + 10_000;
      // Until node has started, /proc shows the exec in progress: wait for the thread's name.
      while (fs.readFileSync(`/proc/${child.pid}/comm`, "utf8").trim() !== "MainThread" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(commandOf(child.pid!)).toBe(path.basename(process.execPath));
      expect(commandOf(dead())).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
    }
  });
});
