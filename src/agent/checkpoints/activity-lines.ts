/**
 * What one bridge process's activity file says (process-activity.ts), and how to tell whether a
 * watch of another process overlapped a turn's recording window.
 *
 * The file: its owner line (store/process-owner.ts), then one line per event of a watch
 * (shared-workspace.ts) of that process: `{"w":id,"m","t","root","full"}` when it starts,
 * `{"w":id,"m","t","path"}` before a file tool writes `path` (absolute), `{"w":id,"m","t","all":true}`
 * before any other changing tool, `{"w":id,"m","t","end":true}` when it closes; and
 * `{"gone":true,"m","t","boot"}` once the process has exited (written by itself at exit, or by
 * whoever first finds it dead: its watches still open then are taken to have lasted until then).
 *
 * Times are stamps on two clocks: `m`, the monotonic clock in milliseconds (CLOCK_MONOTONIC:
 * since boot, one clock for every process of the machine, never stepped), and `t`, the wall
 * clock. Two stamps of the same boot are compared on `m` alone; only stamps that cannot be
 * (another host's process over a shared folder, a file from before a reboot) fall back on the
 * wall clock, with `WALL_SLACK_MS` of doubt. Every comparison asks "surely before?", and a
 * doubt answers no: a watch is then taken to overlap, which over-notes (a conflict the user can
 * force) and never under-notes (work lost).
 *
 * The file is read as untrusted (anyone with the user's rights can write it, a crash can tear
 * its last line): a line is used only if it is exactly one of these; anything else is left out.
 *
 * @module
 */
import { parseOwner, SELF, type ProcessOwner } from "../store/process-owner.js";

/** A moment: `m` monotonic milliseconds of boot `boot` ("" where unknown), `t` wall-clock milliseconds. */
export interface Stamp {
  m: number;
  t: number;
  boot: string;
}

/** How far apart two wall clocks that cannot be compared on the monotonic clock may be taken to be. */
export const WALL_SLACK_MS = 5_000;

/** Now, on both clocks (no system call: both are read through the vDSO). */
export function stampNow(): Stamp {
  return { m: Number(process.hrtime.bigint() / 1000n) / 1000, t: Date.now(), boot: SELF.boot ?? "" };
}

/** `s`, `ms` later on both clocks. */
export const later = (s: Stamp, ms: number): Stamp => ({ m: s.m + ms, t: s.t + ms, boot: s.boot });

/** Whether `a` is surely before `b`: on the monotonic clock when both are of one boot, else on the wall clock with slack. */
export function surelyBefore(a: Stamp, b: Stamp): boolean {
  return a.boot !== "" && a.boot === b.boot ? a.m < b.m : a.t + WALL_SLACK_MS < b.t;
}

/** One watch of another process, as its lines tell it. */
export interface ActivityWatch {
  root: string;
  full: boolean;
  start: Stamp;
  /** When it closed; absent while open (or when the process died with it open). */
  end?: Stamp;
  /** It ran a changing tool other than a file tool. */
  all: boolean;
  /** The absolute paths its file tools wrote. */
  paths: string[];
  /** Its lines as written (a compaction keeps them as they are). */
  lines: string[];
}

export interface ActivityFile {
  /** The process writing it; undefined when the first line is no owner line. */
  owner: ProcessOwner | undefined;
  watches: Map<number, ActivityWatch>;
  /** When the process was first known to be gone. */
  gone?: Stamp;
}

/** The line of an event of watch `id` at `at`. */
export function watchLine(id: number, at: Stamp, what: { root: string; full: boolean } | { path: string } | { all: true } | { end: true }): string {
  return `${JSON.stringify({ w: id, m: at.m, t: at.t, ...what })}\n`;
}

/** The line saying the process is gone, as of `at`. */
export const goneLine = (at: Stamp): string => `${JSON.stringify({ gone: true, m: at.m, t: at.t, boot: at.boot })}\n`;

const MAX_PATH_CHARS = 4096;
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isAbsolute = (v: unknown): v is string => typeof v === "string" && v.startsWith("/") && v.length <= MAX_PATH_CHARS && !v.includes("\0");

/** Reads an activity file's text: whole lines only (a torn last line is left out), each used only if it is exactly a line of this format. */
export function parseActivity(text: string): ActivityFile {
  const lines = text.split("\n");
  lines.pop(); // the torn rest (or "" after the last newline)
  const owner = lines.length > 0 ? parseOwner(`${lines[0]}\n`) : undefined;
  const file: ActivityFile = { owner, watches: new Map() };
  if (!owner) return file;
  const boot = owner.boot ?? "";
  for (const raw of lines.slice(1)) {
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(raw);
    } catch {
      continue;
    }
    if (typeof v !== "object" || v === null || !isNumber(v.m) || !isNumber(v.t)) continue;
    if (v.gone === true && typeof v.boot === "string") {
      const at = { m: v.m, t: v.t, boot: v.boot };
      // Two finders may both write one: the first is when the process was surely gone.
      if (!file.gone || surelyBefore(at, file.gone)) file.gone = at;
      continue;
    }
    const id = v.w;
    if (!Number.isSafeInteger(id) || (id as number) < 1) continue;
    const at = { m: v.m, t: v.t, boot };
    const watch = file.watches.get(id as number);
    if (isAbsolute(v.root) && typeof v.full === "boolean") {
      if (!watch) file.watches.set(id as number, { root: v.root, full: v.full, start: at, all: false, paths: [], lines: [raw] });
      continue;
    }
    if (!watch) continue; // an event of a watch whose start is not here: not a line this format writes
    watch.lines.push(raw);
    if (isAbsolute(v.path)) watch.paths.push(v.path);
    else if (v.all === true) watch.all = true;
    else if (v.end === true) watch.end = at;
  }
  return file;
}

/**
 * Whether `watch` may have changed something between `from` and `to` (a turn's recording
 * window): unless it surely ended before `from` (an open watch of a gone process ended when it
 * was found gone), or surely started after `to`.
 */
export function overlaps(watch: ActivityWatch, gone: Stamp | undefined, from: Stamp, to: Stamp): boolean {
  const end = watch.end ?? gone;
  return !(end && surelyBefore(end, from)) && !surelyBefore(to, watch.start);
}
