/**
 * Finding and cleaning up the processes a test's bash tool calls started, by a marker in their
 * command lines.
 */
import * as fs from "node:fs";

let counter = 0;

/** A marker unique to this test process and call. */
export function marker(): string {
  return `hbrel${process.pid}x${Date.now() % 100000}x${++counter}`;
}

/**
 * Pids of live (not zombie) processes whose command line contains `mark`; with `exact`, one of
 * whose arguments is `mark` (not the shell whose command text names it).
 */
export function pidsWith(mark: string, exact = false): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!(exact ? cmdline.split("\0").includes(mark) : cmdline.includes(mark))) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      if (!/\) Z /.test(stat)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/** Polls `cond` every 50 ms until it holds or `ms` pass; returns its last value. */
export async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

/** SIGKILLs whatever is left with `mark` (their whole process groups), so a failed test leaves nothing behind. */
export function killLeftovers(mark: string): void {
  for (const pid of pidsWith(mark)) {
    try {
      const pgid = Number(fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[2]);
      process.kill(pgid > 1 ? -pgid : pid, "SIGKILL");
    } catch {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
}

/** Peak resident set size of a live process, in bytes (VmHWM). */
export function peakRss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status);
  if (!kb) throw new Error(`no VmHWM for ${pid}`);
  return Number(kb[1]) * 1024;
}

/**
 * A command whose processes ignore SIGTERM (`M-stubborn`) or just run long (`M-plain`), tagged
 * with `m` in their command lines (`; :` keeps bash from exec'ing the sleep, which would drop
 * the tag), and waits for them.
 */
export function stubbornCommand(m: string): string {
  return `bash -c 'trap "" TERM; while :; do sleep 0.2; done' ${m}-stubborn & bash -c 'sleep 86400; :' ${m}-plain & wait`;
}
