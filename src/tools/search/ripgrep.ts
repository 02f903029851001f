/**
 * ripgrep, when the machine has it: found by absolute path only (never through PATH, never from
 * the workspace), version-checked once, and run with flags that reproduce the built-in search's
 * rules exactly:
 *  - `--no-config`: no RIPGREP_CONFIG_PATH file changes the flags;
 *  - `--no-require-git --no-ignore-global --no-ignore-exclude --no-ignore-dot --no-ignore-parent`:
 *    the `.gitignore` files under the walk root, nested and with negations, and nothing else —
 *    not `.git/info/exclude`, the user's global excludes, `.ignore`/`.rgignore`, or any
 *    `.gitignore` above the root (those between the workspace and the root are passed with
 *    `--ignore-file` by the caller);
 *  - `--hidden -g '!.git'`: dotfiles are searched, `.git` (folder or file) never;
 *  - no `--follow` in a confined mode: links are neither followed nor listed.
 * Whatever ripgrep prints is a candidate only: the caller opens each file itself, race-free,
 * before anything of it reaches the model.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { isOutOfDescriptors, rethrowIfOutOfDescriptors } from "../out-of-descriptors.js";

/** Where ripgrep is looked for, in order (`HARNESS_RG` overrides: an absolute path, or `off`). */
export const RIPGREP_LOCATIONS = ["/usr/bin/rg", "/usr/local/bin/rg", "/bin/rg", "/opt/homebrew/bin/rg"];
/** Oldest ripgrep whose flags were checked against these rules. */
export const RIPGREP_MIN_MAJOR = 13;

export const RIPGREP_COMMON_FLAGS = [
  "--no-config",
  "--no-require-git",
  "--no-ignore-global",
  "--no-ignore-exclude",
  "--no-ignore-dot",
  "--no-ignore-parent",
  "--hidden",
  "--glob=!.git",
  "--no-messages",
];

let located: Promise<string | undefined> | undefined;
/** A probe could not even start for want of descriptors: its "not found" is not to be kept. */
let probeWasStarved = false;

async function probe(file: string): Promise<string | undefined> {
  try {
    const st = await fs.promises.stat(file);
    if (!st.isFile()) return undefined;
    await fs.promises.access(file, fs.constants.X_OK);
  } catch {
    return undefined;
  }
  const out = await new Promise<string>((resolve) => {
    const child = spawn(file, ["--version"], { stdio: ["ignore", "pipe", "ignore"], env: {} });
    let text = "";
    child.on("error", (err) => {
      if (isOutOfDescriptors(err)) probeWasStarved = true;
      resolve("");
    });
    if (!child.stdout) return; // not started (out of descriptors: the error follows)
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.stdout.setEncoding("utf8").on("data", (d: string) => (text = (text + d).slice(0, 4096)));
    child.on("close", () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
  const major = /^ripgrep (\d+)\./.exec(out);
  return major && Number(major[1]) >= RIPGREP_MIN_MAJOR ? file : undefined;
}

/** The ripgrep executable to use, or `undefined` (then the built-in search runs). Cached. */
export function findRipgrep(): Promise<string | undefined> {
  located ??= (async () => {
    const override = process.env.HARNESS_RG;
    if (override === "off") return undefined;
    if (override && override.startsWith("/")) return probe(override);
    for (const file of RIPGREP_LOCATIONS) {
      const found = await probe(file);
      if (found) return found;
    }
    return undefined;
  })();
  const found = located;
  void found.then((rg) => {
    if (rg === undefined && probeWasStarved && located === found) located = undefined;
    probeWasStarved = false;
  });
  return found;
}

/** Forgets the cached lookup (tests switch `HARNESS_RG`). */
export function resetRipgrepLookup(): void {
  located = undefined;
}

export interface RgRun {
  /** Exit code (0 found, 1 nothing found, 2 error), or null if killed. */
  code: number | null;
  /** The last few KiB of stderr. */
  stderrTail: string;
  /**
   * Set when ripgrep was stopped by its watchdog: it waited to open a FIFO, or grew past
   * `RIPGREP_MAX_RSS_BYTES` (it reads every `.gitignore` it meets by name, whole, following links:
   * one that is a FIFO blocks it for ever, one linked to /dev/zero eats memory without end). The
   * caller falls back to the built-in engine, which reads `.gitignore` files safely.
   */
  abandoned?: "fifo" | "memory";
}

/** How often a running ripgrep is checked by its watchdog. */
const RIPGREP_WATCH_MS = 100;
/** Resident memory past which a ripgrep is stopped (a search of ours needs a few MB). */
export const RIPGREP_MAX_RSS_BYTES = 512 * 1024 * 1024;

/**
 * Why process `pid` must be stopped, if it must: a thread asleep in the kernel's FIFO open
 * (`wait_for_partner`), or a resident size over the bound. Linux only; elsewhere nothing is seen.
 */
function watchdogVerdict(pid: number): "fifo" | "memory" | undefined {
  try {
    const rssPages = Number(fs.readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]);
    if (rssPages * 4096 > RIPGREP_MAX_RSS_BYTES) return "memory";
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      if (fs.readFileSync(`/proc/${pid}/task/${task}/wchan`, "utf8").trim() === "wait_for_partner") return "fifo";
    }
  } catch {
    // gone, or no /proc
  }
  return undefined;
}

/**
 * Runs ripgrep; `onRecord` gets each NUL- or newline-terminated record of stdout (as chosen by
 * `separator`), in order, and ripgrep's output waits while it runs (so it may be async); it
 * returns `false` to stop ripgrep early. `onEnd` runs after the last record of a run that was not
 * stopped. `onStderrLine` gets each stderr line. ripgrep is killed on abort (then this rejects
 * with the signal's reason) and whenever this returns early.
 */
export async function runRipgrep(options: {
  rg: string;
  args: string[];
  cwd: string;
  signal: AbortSignal;
  separator: 0 | 10;
  onRecord: (record: Buffer) => boolean | Promise<boolean>;
  onEnd?: () => unknown;
  onStderrLine?: (line: string) => void;
  /** Bytes written to ripgrep's stdin (else stdin is /dev/null). */
  input?: Buffer;
}): Promise<RgRun> {
  const { signal } = options;
  signal.throwIfAborted();
  const child = spawn(options.rg, options.args, {
    cwd: options.cwd,
    stdio: [options.input ? "pipe" : "ignore", "pipe", "pipe"],
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  });
  const closed = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve(code));
  });
  closed.catch(() => undefined);
  if (!child.stdout || !child.stderr || (options.input && !child.stdin)) {
    // Not started: its pipes could not be made (the error, EMFILE for one, comes next).
    const failure = await closed.then(() => new Error("ripgrep could not be started"), (err: unknown) => err);
    rethrowIfOutOfDescriptors(failure);
    throw failure;
  }
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    child.kill("SIGKILL");
  };
  signal.addEventListener("abort", stop, { once: true });
  let abandoned: "fifo" | "memory" | undefined;
  const watchdog = setInterval(() => {
    const verdict = child.pid === undefined ? undefined : watchdogVerdict(child.pid);
    if (verdict) {
      abandoned = verdict;
      stop();
    }
  }, RIPGREP_WATCH_MS);
  watchdog.unref();
  if (options.input) {
    child.stdin!.on("error", () => undefined); // ripgrep may stop reading early (--max-count)
    child.stdin!.end(options.input);
  }
  let stderrTail = "";
  let stderrLine = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderrTail = (stderrTail + d).slice(-4096);
    if (!options.onStderrLine) return;
    const lines = (stderrLine + d).split("\n");
    stderrLine = lines.pop()!.slice(-65536);
    for (const l of lines) options.onStderrLine(l);
  });
  let finished = false;
  try {
    let pending = Buffer.alloc(0);
    reading: for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
      let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let at: number;
      while ((at = buf.indexOf(options.separator)) >= 0) {
        const record = buf.subarray(0, at);
        buf = buf.subarray(at + 1);
        if (stopped) break reading;
        const more = options.onRecord(record);
        // Awaited only when it is a promise: most records are taken synchronously.
        if (!(typeof more === "boolean" ? more : await more)) {
          stop();
          break reading;
        }
      }
      pending = Buffer.from(buf);
    }
    if (!stopped) await options.onEnd?.();
    finished = true;
  } finally {
    if (!finished) stop(); // leaving on an error: ripgrep must not outlive the call
    signal.removeEventListener("abort", stop);
    clearInterval(watchdog);
  }
  const code = await closed;
  signal.throwIfAborted();
  return { code: stopped ? null : code, stderrTail, ...(abandoned ? { abandoned } : {}) };
}
