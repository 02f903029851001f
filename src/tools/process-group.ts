/**
 * Running a command in its own process group, with bounded output capture, and making sure the
 * whole group dies: on timeout, on abort, when the command ends, and when the bridge itself dies.
 *
 * How the group is tied to the bridge's life: the command is started (detached, so it leads a new
 * process group) through a small bash wrapper that receives an extra pipe on fd 3. The wrapper
 * starts a watcher in the background that blocks reading fd 3 and, when the read returns (EOF:
 * the bridge closed its end, which the kernel does when the bridge exits in any way, SIGKILL
 * included), sends SIGKILL to the whole process group. The watcher ignores SIGTERM/SIGINT/SIGHUP,
 * so it outlives a polite termination and still enforces the end. fd 3 is closed for the command.
 *
 * Processes that leave the group on purpose (`setsid`, daemons) escape the group's kill; inside
 * bubblewrap's PID namespace (see bash.ts) they die with the namespace's init. Unconfined, the
 * caller asks for `endStrays`: when the bridge stops the command (timeout, abort) they are found
 * in /proc while the command still runs and ended by their identity (process-tree.ts). At the
 * command's ordinary end they are not: its shell has exited, and what it left is reparented.
 */
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { descendants, endStrays } from "./process-tree.js";

/** Bytes kept from the start of the output. */
export const OUTPUT_HEAD_BYTES = 32 * 1024;
/** Bytes kept from the end of the output (a rolling window). */
export const OUTPUT_TAIL_BYTES = 32 * 1024;
/** Time between SIGTERM and SIGKILL when the group is stopped. */
export const KILL_GRACE_MS = 2000;
/** After the command exits, how long to wait for its output pipes to close (held by escaped processes). */
export const STREAM_DRAIN_MS = 2000;

/**
 * The wrapper, run as `BASH -c WRAPPER BASH COMMAND` (BASH an absolute path, so `$0` is it): start
 * the fd-3 watcher, then replace itself with `BASH -c COMMAND` (same pid, so the exit status is
 * the command's; never a `bash` found through PATH), stderr merged into stdout so the output
 * interleaves as a terminal would show it.
 */
export const GROUP_WRAPPER = [
  "( trap '' TERM INT HUP; read -r -u 3 _; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &",
  'exec "$0" -c "$1" 3<&- 2>&1',
].join("\n");

/** Keeps the first `headMax` bytes and a rolling window of the last `tailMax` bytes of a stream. */
export class HeadTailBuffer {
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  /** Every byte pushed, kept or not. */
  total = 0;

  constructor(
    readonly headMax = OUTPUT_HEAD_BYTES,
    readonly tailMax = OUTPUT_TAIL_BYTES,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headLen < this.headMax) {
      const take = Math.min(this.headMax - this.headLen, chunk.length);
      this.head.push(chunk.subarray(0, take));
      this.headLen += take;
      chunk = chunk.subarray(take);
    }
    if (chunk.length === 0 || this.tailMax === 0) return;
    if (chunk.length >= this.tailMax) {
      this.tail = [Buffer.from(chunk.subarray(chunk.length - this.tailMax))];
      this.tailLen = this.tailMax;
      return;
    }
    this.tail.push(Buffer.from(chunk));
    this.tailLen += chunk.length;
    while (this.tailLen - this.tail[0].length >= this.tailMax) this.tailLen -= this.tail.shift()!.length;
  }

  /** Bytes dropped between head and tail. */
  get cut(): number {
    return this.total - this.headLen - Math.min(this.tailLen, this.tailMax);
  }

  /** The kept text; when bytes were dropped, a marker in their place says how many. */
  text(): string {
    const head = Buffer.concat(this.head);
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.tailMax) tail = tail.subarray(tail.length - this.tailMax);
    const cut = this.cut;
    if (cut === 0) return Buffer.concat([head, tail]).toString("utf8");
    return (
      trimIncompleteEnd(head).toString("utf8") +
      `\n[… ${cut} bytes of output cut; showing the first ${head.length} and the last ${tail.length} of ${this.total} bytes …]\n` +
      trimIncompleteStart(tail).toString("utf8")
    );
  }
}

/** Drops a UTF-8 sequence cut off at the end of `buf`. */
function trimIncompleteEnd(buf: Buffer): Buffer {
  for (let i = buf.length - 1, n = 1; i >= 0 && n <= 4; i--, n++) {
    const b = buf[i];
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > n ? buf.subarray(0, i) : buf;
  }
  return buf;
}

/** Drops continuation bytes at the start of `buf` (the rest of a cut UTF-8 sequence). */
function trimIncompleteStart(buf: Buffer): Buffer {
  let i = 0;
  while (i < 3 && i < buf.length && (buf[i] & 0xc0) === 0x80) i++;
  return buf.subarray(i);
}

/** Sends `signal` to process group `pgid`; false when the group is gone. */
export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

export interface GroupRunOptions {
  /** Program and arguments; the wrapper is the caller's business (see `GROUP_WRAPPER`). */
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal: AbortSignal;
  /** SIGTERM → SIGKILL delay (default `KILL_GRACE_MS`). */
  graceMs?: number;
  /**
   * Whether stopping the command also ends its descendants that left its group (the caller's
   * choice: a sandbox that holds them itself, bubblewrap's PID namespace, is not second-guessed).
   */
  endStrays?: boolean;
  headBytes?: number;
  tailBytes?: number;
}

export interface GroupRunResult {
  /** The exit code, or null when killed by a signal or not started. */
  code: number | null;
  /** The signal that ended the command, if any. */
  exitSignal: NodeJS.Signals | null;
  /** Why the group was stopped by us, if it was. */
  stopped: "timeout" | "abort" | null;
  /** The spawn failure, if the command could not start. */
  spawnError?: Error;
  output: HeadTailBuffer;
  /** The process group id (the leader's pid). */
  pid?: number;
}

/**
 * Runs `argv` as the leader of a new process group with fd 3 as a life-line pipe, capturing its
 * stdout and stderr (in arrival order) into a head+tail buffer. Never rejects.
 */
export function runInProcessGroup(options: GroupRunOptions): Promise<GroupRunResult> {
  const grace = options.graceMs ?? KILL_GRACE_MS;
  const output = new HeadTailBuffer(options.headBytes, options.tailBytes);
  return new Promise((resolve) => {
    const result: GroupRunResult = { code: null, exitSignal: null, stopped: null, output };
    if (options.signal.aborted) {
      result.stopped = "abort";
      resolve(result);
      return;
    }
    const child = spawn(options.argv[0], options.argv.slice(1), {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    result.pid = child.pid;
    // A spawn that failed for want of descriptors (EMFILE, ENFILE) has no stdio at all and
    // reports it as the "error" below, on the next tick: nothing here may throw before that
    // listener is on, or the event is unhandled and ends the bridge.
    const lifeline = (child.stdio?.[3] ?? null) as Readable | null;
    const timers: NodeJS.Timeout[] = [];
    let exited = false;
    let settled = false;
    let openStreams = 2;

    const settle = () => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      options.signal.removeEventListener("abort", onAbort);
      child.stdout?.destroy();
      child.stderr?.destroy();
      // Closing our end of the life-line makes any watcher still running kill what is left.
      lifeline?.destroy();
      resolve(result);
    };
    const later = (ms: number, fn: () => void) => timers.push(setTimeout(fn, ms));

    const stop = (why: "timeout" | "abort") => {
      if (result.stopped || exited) return;
      result.stopped = why;
      if (child.pid === undefined) return;
      const pid = child.pid;
      // Found before the group is signalled: once the shell is gone, what left it is reparented.
      const strays = options.endStrays ? descendants(pid) : [];
      killGroup(pid, "SIGTERM");
      endStrays(strays, grace);
      // Not in `timers`: the SIGKILL must come even when everything settled before it.
      setTimeout(() => killGroup(pid, "SIGKILL"), grace).unref();
      later(grace + 1000, settle); // last resort if the leader somehow lingers
    };
    const onAbort = () => stop("abort");
    options.signal.addEventListener("abort", onAbort, { once: true });
    later(options.timeoutMs, () => stop("timeout"));

    for (const stream of [child.stdout, child.stderr]) {
      stream?.on("data", (chunk: Buffer) => output.push(chunk));
      stream?.on("error", () => {});
      stream?.on("close", () => {
        if (--openStreams === 0 && exited) settle();
      });
    }
    lifeline?.on("error", () => {});

    child.on("error", (err) => {
      // spawn failure (ENOENT for the program or cwd); no process to wait for.
      result.spawnError = err;
      exited = true;
      settle();
    });
    child.on("exit", (code, sig) => {
      exited = true;
      result.code = code;
      result.exitSignal = sig;
      if (child.pid !== undefined && !result.stopped) {
        // The command is done: whatever it left running in its group (background jobs, the
        // watcher) goes with it.
        killGroup(child.pid, "SIGKILL");
      }
      if (openStreams === 0) settle();
      // Output pipes held open by a process that left the group: stop reading after a while.
      else later(result.stopped ? 250 : STREAM_DRAIN_MS, settle);
    });
  });
}
