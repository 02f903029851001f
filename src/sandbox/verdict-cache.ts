/**
 * The Landlock start-up probe's verdict, remembered in the private folder (landlock-helper.ts)
 * so that a later bridge's `initialize` can report it without starting the helper first.
 *
 * What the verdict depends on is the key, and every part of it is a cheap read (no process, no
 * `node:crypto`: both on the start-up path): the kernel's boot (`boot_id`: the kernel, its
 * `lsm=` and Landlock's presence change only with a reboot), the helper's identity (its
 * sha256) and the executable running it, the rules the probe passes (which folders exist, the
 * environment that shapes them), and the process's confinement context: uid, gid and groups,
 * capabilities, `NoNewPrivs`, seccomp mode and filter count (`/proc/self/status`), the
 * namespaces (`/proc/self/ns/*`) and the LSM label (`/proc/self/attr/current`).
 *
 * Invariant: the remembered verdict is only ever a report. What runs a command is the real
 * probe of its workspace (probe.ts `chooseSandbox`) and the helper, which refuses to run
 * anything unconfined; the first of those in a process that reported a remembered verdict
 * confirms it, and a verdict it contradicts is re-probed and rewritten (probe.ts).
 *
 * The file is hostile input: it is read only if it is a regular file (never through a link,
 * never blocking on a FIFO), this uid's, closed to others, at most `MAX_BYTES`, and holds a
 * well-formed verdict for exactly this key; anything else is a miss (the helper is probed). It
 * is written under a unique name, 0600, and renamed into place, in the private folder only this
 * uid can write.
 */
import { type Stats, closeSync, constants, fstatSync, link as hardLink, lstat, openSync, readdir, readFileSync, readlinkSync, rename, renameSync, rm, statSync, unlink, unlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { joinedPath } from "../normal-path.js";
import { isStaleTemp, isTempName, tempSibling } from "../temp-name.js";
import { COMMAND_TMP_PREFIX } from "./landlock.js";
import { failedForWantOfDescriptors } from "./status.js";

/** A verdict worth remembering: the kernel's Landlock ABI, or the helper's own refusal. */
export type Verdict = { abi: number } | { failure: string };

/** Changes when the file's meaning does. */
const FORMAT = 1;
/** The files' names in the private folder: this, then the key's hash (`verdictFile`). */
const PREFIX = "landlock-verdict-";
/** A verdict file not rewritten for this long belongs to a key no start has had since (another build, another boot): removed. */
const STALE_MS = 24 * 60 * 60 * 1000;
const MAX_BYTES = 64 * 1024;
const MAX_FAILURE_CHARS = 1000;
const NAMESPACES = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"];
/** The fields of /proc/self/status that say what this process may do. */
const STATUS_FIELDS = new Set(["Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters"]);
/**
 * Those lines of a /proc/self/status text. Line by line with a set, not a multiline regular
 * expression: on the start-up path that runs in V8's regexp interpreter, at every position of
 * the ~1.4 KB text (bench/README.md, "Why the code does this").
 */
const statusLines = (text: string): string =>
  text
    .split("\n")
    .filter((line) => {
      const colon = line.indexOf(":");
      return colon > 0 && STATUS_FIELDS.has(line.slice(0, colon));
    })
    .join("\n");

const read = (file: string): string => {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "-";
  }
};
const link = (file: string): string => {
  try {
    return readlinkSync(file);
  } catch {
    return "-";
  }
};

/**
 * The key of the probe's verdict in this process, for the helper `helper` (its sha256) run with
 * the rule arguments `rules`; undefined where there is no boot id to tie it to.
 */
export function verdictKey(helper: string, rules: readonly string[]): string | undefined {
  const boot = read("/proc/sys/kernel/random/boot_id");
  let exe: string | undefined;
  try {
    const st = statSync(process.execPath);
    exe = `${process.execPath}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    exe = undefined;
  }
  const status = statusLines(read("/proc/self/status")) || "-";
  // Every part is read even when one is missing (then there is no key): the same code runs on
  // every machine, so what the start-up run compiles does not depend on the build machine's
  // /proc (scripts/start-up-cache.cjs).
  const key = [
    `boot ${boot}`,
    `helper ${helper}`,
    `exe ${exe}`,
    `ids ${process.getuid?.()}:${process.getgid?.()}`,
    status,
    ...NAMESPACES.map((ns) => `${ns} ${link(`/proc/self/ns/${ns}`)}`),
    `lsm ${read("/proc/self/attr/current")}`,
    `rules ${JSON.stringify(rules)}`,
  ].join("\n");
  return boot === "-" || exe === undefined ? undefined : key;
}

/**
 * The file of `key`'s verdict in `folder`: one per key, so that bridges with different keys (two
 * builds, two environments) do not overwrite each other's. The name is a cheap 64-bit hash of
 * the key (no `node:crypto` on the start-up path); the file holds the whole key, compared on
 * reading, so a collision is a miss, never another key's verdict. The hash takes the key's
 * UTF-8 bytes a 32-bit word at a time from a typed array, the two 32-bit halves of the name
 * from alternate words, then its length into both: on the start-up path this loop still runs in
 * the interpreter, where each step counts (a step per character, a `charCodeAt` call each, cost
 * several times more).
 */
export function verdictFile(folder: string, key: string): string {
  const length = Buffer.byteLength(key);
  const n = Math.ceil(length / 8) * 2;
  const words = new Int32Array(n + 2);
  Buffer.from(words.buffer).write(key);
  words[n] = length;
  words[n + 1] = length;
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < words.length; i += 2) {
    a = Math.imul(a ^ words[i], 0x01000193);
    a ^= a >>> 15;
    b = Math.imul(b ^ words[i + 1], 0x5bd1e995);
    b ^= b >>> 13;
  }
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
  // Not normalized again where the folder is in normal form (normal-path.ts: why).
  return joinedPath(folder, `${PREFIX}${hex(a)}${hex(b)}`);
}

/** The file's text if it is a safe file to read (see the module comment), else undefined. */
function readSafely(file: string): string | undefined {
  let fd: number | undefined;
  try {
    // O_NONBLOCK: opening a FIFO returns at once (then it is not a regular file: ignored).
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0 || st.size > MAX_BYTES) return undefined;
    // Read whole through the descriptor just checked: one native call for the read and the
    // decoding (readFileSync is on the start-up path already, a read loop would be one more
    // function to compile there). Only this uid can grow the file since: checked again.
    const text = readFileSync(fd, "utf8");
    return Buffer.byteLength(text) <= MAX_BYTES ? text : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `value` if it is a well-formed verdict, else undefined. */
function asVerdict(value: unknown): Verdict | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (Object.keys(v).length !== 1) return undefined;
  if (Number.isInteger(v.abi) && (v.abi as number) >= 1 && (v.abi as number) <= 1000) return { abi: v.abi as number };
  if (typeof v.failure === "string" && v.failure.length > 0 && v.failure.length <= MAX_FAILURE_CHARS && /^[\x20-\x7e]+$/.test(v.failure)) {
    return { failure: v.failure };
  }
  return undefined;
}

/**
 * The verdict remembered in `folder` for `key`, or undefined (no file, an unsafe or malformed one,
 * another key's). Every answer passes `asVerdict`, a missing file too: the build's start-up run
 * finds no file (scripts/start-up-cache.cjs), and a function it never calls is compiled at every
 * start that finds one.
 */
export function recalledVerdict(folder: string, key: string): Verdict | undefined {
  const text = readSafely(verdictFile(folder, key));
  let data: Record<string, unknown> | null | undefined;
  try {
    data = text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown> | null);
  } catch {
    data = undefined;
  }
  return asVerdict(data?.format === FORMAT && data.key === key ? data.verdict : undefined);
}

/**
 * Remembers `verdict` for `key` in `folder`; best effort. A verdict that is not well-formed is
 * forgotten instead, and so is a refusal for want of file descriptors: it says nothing of the
 * machine, only of that moment (status.ts `failedForWantOfDescriptors`).
 */
export function rememberVerdict(folder: string, key: string, verdict: Verdict): void {
  const checked = asVerdict(verdict);
  if (!checked || ("failure" in checked && failedForWantOfDescriptors(checked.failure))) return forgetVerdict(folder, key);
  const file = verdictFile(folder, key);
  const tmp = tempSibling(file);
  let made = false;
  try {
    const fd = openSync(tmp, "wx", 0o600);
    made = true;
    try {
      writeFileSync(fd, JSON.stringify({ format: FORMAT, key, verdict: checked }));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch {
    // Not remembered: the next start probes. The temporary goes if this call made it (a name
    // that was there already is someone else's).
    if (!made) return;
    try {
      unlinkSync(tmp);
    } catch {
      // renamed after all
    }
  }
}

/** Forgets `key`'s remembered verdict (the next start with it probes); best effort. */
export function forgetVerdict(folder: string, key: string): void {
  try {
    unlinkSync(verdictFile(folder, key));
  } catch {
    // not there, or not this uid's to remove
  }
}

/**
 * Removes the verdict files no start has rewritten for `STALE_MS` (their keys are gone); best
 * effort. Asynchronous, one file system call in flight at a time: the folder may hold hundreds of
 * files (one per build and environment seen in a day), and a bridge prunes right after its
 * first response, where a synchronous walk would hold the main thread (and the first turn) for
 * all of them; this way each step is one small callback between others, and the thread pool
 * keeps its other threads for the turn's own file work.
 *
 * Another bridge may rename a fresh verdict into a name between the look at its age and the
 * removal, and POSIX has no "remove this name only if it is still that file". So a stale file is
 * first renamed to a name of this prune's own (which takes whatever is there then, atomically),
 * judged again there, and removed only if it is still stale; a fresh one taken that way is linked
 * back, unless a newer one took the name meanwhile (a link never replaces a file). Where it
 * cannot be linked back (a file system without hard links) it is dropped, never renamed back: a
 * rename replaces whatever took the name meanwhile, maybe a newer verdict correcting it. A reader
 * in that instant misses the verdict and probes: it costs a start a probe, never a wrong verdict.
 *
 * What killed processes left in the folder goes too: the temporaries of its writers (a
 * verdict's, the helper copy's, this prune's own names) once stale (temp-name.ts: why that is
 * safe; no one renames such a name into place any more, so it is unlinked as it is), and the
 * commands' temporary folders (landlock.ts `makeCommandTmp`), with what the commands wrote there.
 */
export async function pruneVerdicts(folder: string, now = Date.now()): Promise<void> {
  const names = await new Promise<string[]>((resolve) => readdir(folder, (error, found) => resolve(error ? [] : found)));
  const statOf = (file: string) => new Promise<Stats | undefined>((resolve) => lstat(file, (error, st) => resolve(error ? undefined : st)));
  const staleAt = async (file: string) => {
    const st = await statOf(file);
    return st !== undefined && now - st.mtimeMs > STALE_MS;
  };
  const failure = (call: (callback: (error: NodeJS.ErrnoException | null) => void) => void) => new Promise<string | undefined>((resolve) => call((error) => resolve(error ? (error.code ?? "error") : undefined)));
  for (const name of names) {
    const file = path.join(folder, name);
    if (isTempName(name)) {
      const st = await statOf(file);
      if (st && isStaleTemp(st.mtimeMs, now)) await failure((callback) => unlink(file, callback));
      continue;
    }
    if (name.startsWith(COMMAND_TMP_PREFIX)) {
      // A command's folder lives as long as its command, whose timeout is capped far below the
      // temporaries' stale age (tools/bash.ts): an older one was left by a killed bridge.
      const st = await statOf(file);
      if (st?.isDirectory() && isStaleTemp(st.mtimeMs, now)) await failure((callback) => rm(file, { recursive: true, force: true }, callback));
      continue;
    }
    if (!name.startsWith(PREFIX)) continue;
    // gone already, or not this uid's: left as it is
    if (!(await staleAt(file))) continue;
    const taken = tempSibling(file);
    if (await failure((callback) => rename(file, taken, callback))) continue;
    // Fresh: linked back (or not, see above); whatever happened, the prune's own name goes.
    if (!(await staleAt(taken))) await failure((callback) => hardLink(taken, file, callback));
    await failure((callback) => unlink(taken, callback));
  }
}
