/**
 * Temporary files written beside their target and renamed over it (the Landlock helper's copy,
 * the remembered verdicts, checkpoint blobs, session metas, a fork's log): one naming rule for
 * all of them, and one rule for the leftovers a killed writer leaves.
 *
 * A name is `<target>.tmp-<pid>-<12 hex digits>`. The pid alone is not unique: bridges in
 * different PID namespaces (containers sharing a volume) often have the same one (1, 7, …), and
 * one process may write the same target twice at once; two writers on one name interleave their
 * bytes and rename a mix into place. The 48 random bits make a clash between two live writers
 * as good as impossible, and the writers create the name `O_EXCL`, so even a clash fails that
 * write instead of sharing a file. The bits come from `Math.random` (seeded from the OS's
 * entropy in every process), not node:crypto: the name must be unique, not secret (`O_EXCL`
 * refuses any name already there, planted or not), and loading node:crypto is a measurable
 * part of a start that writes a verdict before its `initialize` response (bench/README.md).
 *
 * Leftovers: a writer killed between the create and the rename leaves its temporary for good.
 * The folders' own scans (the verdict prune, the checkpoint store's size count, `session/list`)
 * remove a temporary once it is `STALE_TEMP_MS` old — a live writer renames its file within
 * moments of creating it, and no one writes a name that is not its own, so an old one has no
 * writer left; a young one may be another process's write in progress and is kept.
 *
 * @module
 */
import { lstatSync, unlinkSync } from "node:fs";
import { join } from "node:path";

/** The mark between a target's name and the writer's part. */
const MARK = ".tmp-";
const TEMP_NAME = /\.tmp-\d+-[0-9a-f]{12}$/;

/** How old a temporary must be before a scan removes it: far beyond any live write. */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/** A fresh temporary name beside `target` (a path or a bare name), to be created `O_EXCL` and renamed over it. */
export function tempSibling(target: string): string {
  const random = Math.floor(Math.random() * 2 ** 48)
    .toString(16)
    .padStart(12, "0");
  return `${target}${MARK}${process.pid}-${random}`;
}

/** Whether the file name (or path) `name` is one `tempSibling` makes. */
export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/** Whether a temporary last changed at `mtimeMs` is a leftover (see the module comment). */
export function isStaleTemp(mtimeMs: number, now = Date.now()): boolean {
  return now - mtimeMs > STALE_TEMP_MS;
}

/**
 * For a scan of `folder` that meets the file `name`: `true` when it is a temporary (so the scan
 * skips it), which is removed first if it is a stale leftover; best effort, never through a link
 * (one is removed itself, like any leftover). `false`: not a temporary, the scan's own to judge.
 * The name is tested before any path is made: a scan meets thousands of other names.
 */
export function skipTemp(folder: string, name: string, now = Date.now()): boolean {
  if (!isTempName(name)) return false;
  const file = join(folder, name);
  try {
    if (isStaleTemp(lstatSync(file).mtimeMs, now)) unlinkSync(file);
  } catch {
    // gone already, a folder, or not ours to remove: left as it is
  }
  return true;
}
