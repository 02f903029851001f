/**
 * The descendants of a process, read from /proc on Linux, for those a group kill
 * (process-group.ts) misses: those that left its process group (`setsid`, Node's `detached`,
 * Python's `start_new_session`), and those still in it when found that leave it once signalled
 * (a SIGTERM handler calling `setsid`), out of reach of the group's SIGKILL. Once their
 * ancestor is gone they are reparented and can no longer be told apart, so all are found while
 * the ancestor still runs, before it is stopped.
 *
 * Each is signalled by its identity, pid and start time, so a pid the kernel gave to another
 * process meanwhile is never signalled; one that leads a group of its own is signalled as that
 * group, taking along what it started after it was found.
 */
import * as fs from "node:fs";

export interface StrayProcess {
  pid: number;
  /** Its start time (`ProcStat.start`): the pid's identity. */
  start: string | undefined;
  /** Whether it leads a process group of its own. */
  leader: boolean;
  /** The root's group, which it was in when found, or `undefined` if it was outside it. */
  group: number | undefined;
}

/** What /proc/PID/stat says of a process: its parent, its group and its start time. */
export interface ProcStat {
  /** Field 3: `R`, `S`, `D`..., `Z` for a zombie (exited, not yet reaped by its parent), `X` dead. */
  state: string;
  ppid: number;
  pgrp: number;
  /** Field 22, clock ticks since boot: with the pid, the process's identity (a reused pid starts later). */
  start: string | undefined;
}

/** `/proc/<pid>/stat` read (fields 3, 4, 5 and 22); undefined when the process is gone or there is no /proc. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined; // gone, or not Linux
  }
  // The name (field 2) is in parentheses and may hold anything, spaces and ')' included.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): ppid is field 4, pgrp field 5, starttime field 22.
  return { state: fields[0] ?? "", ppid: Number(fields[1]), pgrp: Number(fields[2]), start: fields[19] };
}

interface ProcessTable {
  children: Map<number, number[]>;
  stats: Map<number, ProcStat>;
}

/**
 * The process table, read once per turn of the event loop: the MCP servers and bash commands
 * stopped together (a shutdown stops them all in one turn) share one read of /proc, which costs tens of
 * microseconds per process on the machine.
 */
let table: ProcessTable | undefined;

function processTable(): ProcessTable {
  if (table) return table;
  const children = new Map<number, number[]>();
  const stats = new Map<number, ProcStat>();
  let names: string[] = [];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    /* not Linux: no process is found */
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    if (!s) continue;
    stats.set(Number(name), s);
    const siblings = children.get(s.ppid);
    if (siblings) siblings.push(Number(name));
    else children.set(s.ppid, [Number(name)]);
  }
  table = { children, stats };
  setImmediate(() => {
    table = undefined;
  });
  return table;
}

/** The descendants of `root` (which leads its process group), those outside that group marked; none off Linux. */
export function descendants(root: number): StrayProcess[] {
  const { children, stats } = processTable();
  const strays: StrayProcess[] = [];
  const queue = [root];
  const seen = new Set(queue);
  while (queue.length > 0) {
    for (const pid of children.get(queue.pop()!) ?? []) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      queue.push(pid);
      const s = stats.get(pid)!;
      strays.push({ pid, start: s.start, leader: s.pgrp === pid, group: s.pgrp === root ? root : undefined });
    }
  }
  return strays;
}

/**
 * Signals `stray` (its group, if it leads one) if it is still the process that was found and
 * outside the root's group: one still in it is the group's to end (its watcher among them).
 */
export function signalStray(stray: StrayProcess, signal: NodeJS.Signals): void {
  const now = procStat(stray.pid);
  if (!now || now.start !== stray.start || now.pgrp === stray.group) return;
  try {
    process.kill(stray.leader ? -stray.pid : stray.pid, signal);
  } catch {
    /* gone meanwhile */
  }
}

/** Strays waiting for their SIGKILL, which this process's exit sends at the latest. */
const awaitingKill = new Set<StrayProcess>();
const killAwaiting = () => {
  for (const stray of awaitingKill) signalStray(stray, "SIGKILL");
};

/**
 * SIGTERM to `strays` now, SIGKILL after `graceMs` or when this process exits, whichever comes
 * first, each while outside the root's group: unlike a group, no watcher outlives the bridge to
 * finish one that left it.
 */
export function endStrays(strays: StrayProcess[], graceMs: number): void {
  if (strays.length === 0) return;
  if (awaitingKill.size === 0) process.once("exit", killAwaiting);
  for (const stray of strays) {
    awaitingKill.add(stray);
    signalStray(stray, "SIGTERM");
  }
  setTimeout(() => {
    for (const stray of strays) {
      awaitingKill.delete(stray);
      signalStray(stray, "SIGKILL");
    }
    if (awaitingKill.size === 0) process.off("exit", killAwaiting);
  }, graceMs).unref();
}
