/**
 * Whether programs may run from a folder: hardened hosts mount `/tmp` (and often `/dev/shm`,
 * `/run/user`) `noexec`, and the Landlock helper, written to the private folder under `TMPDIR`
 * (landlock-helper.ts), then fails to start with a bare `EACCES` that names no cause.
 *
 * Read from `/proc/self/mountinfo`, never by starting anything: the mount that holds a folder is
 * the one whose mount point is the longest prefix of its real path (of two with the same mount
 * point, the later one is on top), and `noexec` is a per-mount option (field 6), not one of the
 * file system's (after the ` - `). Only asked once the helper is about to be written, and
 * remembered per folder: it is not on the start-up path a remembered verdict takes.
 *
 * @module
 */
import { readFileSync, realpathSync } from "node:fs";

/** A mount point as mountinfo writes it: space, tab, newline and backslash as `\ooo`. */
function unescaped(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** Whether `mountPoint` is `dir` or one of its ancestors. */
function holds(mountPoint: string, dir: string): boolean {
  return mountPoint === "/" || dir === mountPoint || dir.startsWith(`${mountPoint}/`);
}

const known = new Map<string, string | undefined>();

/**
 * The mount point of the `noexec` mount that holds `dir`, or `undefined` when programs may run
 * there (or it cannot be told: no `/proc`, a folder that is not there — the exec then says why).
 */
export function noexecMountOf(dir: string): string | undefined {
  if (known.has(dir)) return known.get(dir);
  let found: string | undefined;
  try {
    const real = realpathSync.native(dir);
    let best: { point: string; noexec: boolean } | undefined;
    for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
      const fields = line.split(" ");
      if (fields.length < 6) continue;
      const point = unescaped(fields[4]);
      if (!holds(point, real)) continue;
      // `>=`: the later of two mounts on one point is the one on top.
      if (!best || point.length >= best.point.length) best = { point, noexec: fields[5].split(",").includes("noexec") };
    }
    found = best?.noexec ? best.point : undefined;
  } catch {
    found = undefined;
  }
  if (known.size > 64) known.clear();
  known.set(dir, found);
  return found;
}
