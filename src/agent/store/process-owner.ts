/**
 * Who a process is, written down so that another process can later tell whether it still runs:
 * the owner line `{"pid","start","host","pidns"}\n` of the session locks (lock.ts) and of the
 * checkpoint folder of a process without session logs (agent/checkpoints/memory-folder.ts).
 *
 * A process named by a line is gone when that is provable: same host and pid namespace, and the
 * pid does not exist, or it exists but started at another time than the owner did (the pid was
 * reused: the start time is field 22 of `/proc/<pid>/stat`, in clock ticks since boot), or it is
 * a zombie (exited, not reaped: field 3 is `Z`). Another
 * host's process (a folder shared over NFS) or another pid namespace's (a container on a shared
 * volume, even of the same host name: its pids mean nothing here) is taken as alive. The same
 * host is the same host name, or the same boot (`/proc/sys/kernel/random/boot_id`): a host name
 * changed since, or a UTS namespace of its own (`unshare -u`), is still this kernel's process.
 * Without `/proc` (macOS) a reused pid is taken as alive until that process ends.
 *
 * @module
 */
import * as fs from "node:fs";
import * as os from "node:os";
import { procStat } from "../../tools/process-tree.js";

/** Who owns a lock or a folder. */
export interface ProcessOwner {
  pid: number;
  /** The process's start time (`/proc/<pid>/stat` field 22), or "" where there is no `/proc`. */
  start: string;
  host: string;
  /** The pid's namespace (`/proc/self/ns/pid`): containers on one volume, even of one host name, number processes apart. Absent without `/proc` or from older bridges: `seenHere` says how each is judged. */
  pidns?: string;
  /** The kernel's boot id: the same on this machine until it reboots, whatever its host name. "" without `/proc`; absent from older bridges. */
  boot?: string;
}

/** The largest pid a process can have (pid_t is 32-bit); `kill` takes 0 and negatives as process groups. */
const MAX_PID = 2 ** 31 - 1;

/** Longest command name reported (a name is for telling a bridge from another program, not a path). */
const MAX_COMMAND_CHARS = 64;

/**
 * A live process's command name, printable, where there is `/proc`: the last part of its
 * `argv[0]` (`/proc/<pid>/cmdline`), else its `/proc/<pid>/comm`. Not `comm` first: that is the
 * main thread's name, which node sets to "MainThread" in every bridge.
 */
export function commandOf(pid: number): string | undefined {
  const printable = (name: string) => name.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_COMMAND_CHARS) || undefined;
  try {
    const argv0 = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    const name = printable(argv0.slice(argv0.lastIndexOf("/") + 1));
    if (name) return name;
  } catch {
    // gone, or no /proc: comm below says the same
  }
  try {
    return printable(fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim());
  } catch {
    return undefined;
  }
}

function pidNamespace(): string | undefined {
  try {
    return fs.readlinkSync("/proc/self/ns/pid");
  } catch {
    return undefined;
  }
}

const BOOT_ID = "/proc/sys/kernel/random/boot_id";

/**
 * The kernel's boot id, or "" where it cannot be read. Looked for before it is read: a missing
 * file must not throw, since an error's stack trace makes V8 add source positions to the
 * functions on the stack, and the code cache the build's start-up run makes would then hold
 * other bytes on a machine without a boot id (test/dist-build/start-up-cache.test.ts).
 */
function bootId(): string {
  if (!fs.existsSync(BOOT_ID)) return "";
  try {
    return fs.readFileSync(BOOT_ID, "utf8").trim();
  } catch {
    return "";
  }
}

const PIDNS = pidNamespace();
/** This process. */
export const SELF: ProcessOwner = { pid: process.pid, start: procStat(process.pid)?.start ?? "", host: os.hostname(), ...(PIDNS ? { pidns: PIDNS } : {}), boot: bootId() };

/** This process's owner line. */
export const ownerLine = (): string => `${JSON.stringify(SELF)}\n`;

/**
 * Whether the owner's pid names a process `self` can see: same host (its name, or this boot), and the same pid namespace.
 * An owner naming its namespace is seen only by a process that knows its own to be that one: a
 * process without `/proc` (a container that does not mount it, on a volume shared with one that
 * does) cannot tell, and a live owner there would be judged by pids that are not its own. An
 * owner naming none is of this namespace when it names its start time (an older bridge, which
 * read it from `/proc`); naming neither, it was written without `/proc`, which a reader with
 * `/proc` is not (another container, the same case the other way round).
 */
export const seenHere = (owner: ProcessOwner, self: ProcessOwner = SELF): boolean =>
  (owner.host === self.host || (!!owner.boot && owner.boot === self.boot)) &&
  (owner.pidns !== undefined ? owner.pidns === self.pidns : self.pidns === undefined || owner.start !== "");

/** Whether the owner may still be running, as `self` sees it. */
export function alive(owner: ProcessOwner, self: ProcessOwner = SELF): boolean {
  if (!seenHere(owner, self)) return true; // another machine's or pid namespace's process: nothing here can tell
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: it exists (another user's); go on to its start time. ESRCH (or anything else for a valid pid): gone.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(owner.pid);
  // A zombie has exited (its files are closed, it writes nothing more): only its parent has not
  // reaped it yet, which a parent that never waits would put off for good.
  if (stat && (stat.state === "Z" || stat.state === "X")) return false;
  const start = stat?.start;
  return !(start !== undefined && owner.start !== "" && start !== owner.start);
}

/** The owner line read from the start of the open file `fd` of `size` bytes (a line is far shorter than the 4 KiB read). */
export function readOwner(fd: number, size: number): ProcessOwner | undefined {
  const buffer = Buffer.alloc(Math.min(size, 4096));
  return parseOwner(buffer.toString("utf8", 0, fs.readSync(fd, buffer, 0, buffer.length, 0)));
}

/** The owner a whole owner line names; undefined for anything else (half-written, not one). */
export function parseOwner(text: string): ProcessOwner | undefined {
  if (!text.endsWith("\n")) return undefined;
  try {
    const value = JSON.parse(text) as Partial<ProcessOwner>;
    const pid = value.pid;
    // 0 and negatives would name process groups to `kill` (always "alive"): no process owns such a lock.
    if (Number.isInteger(pid) && pid! > 0 && pid! <= MAX_PID && typeof value.start === "string" && typeof value.host === "string" && (value.pidns === undefined || typeof value.pidns === "string") && (value.boot === undefined || typeof value.boot === "string")) {
      return value as ProcessOwner;
    }
  } catch {
    // not a whole owner line
  }
  return undefined;
}
