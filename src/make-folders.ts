/**
 * `mkdir -p` whose failure names its real cause. Node's `mkdirSync(dir, { recursive: true })`
 * answers ENOENT ("no such file or directory") for a folder that cannot be made on a read-only
 * file system (EROFS), so a container's read-only `HOME` read as a missing one, pointing at the
 * wrong fix. Its ENOENT is checked here by making each missing folder on its own, from the
 * nearest existing one down: the first that fails throws its own errno.
 *
 * @module
 */
import { lstatSync, mkdirSync } from "node:fs";
import * as path from "node:path";

/** Makes `dir` and its missing parents with `mode` (less the umask, as mkdir does); throws the real errno of the first that cannot be made. */
export function makeFolders(dir: string, mode: number): void {
  try {
    mkdirSync(dir, { recursive: true, mode });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const missing: string[] = [];
  for (let at = path.resolve(dir); !lstatSync(at, { throwIfNoEntry: false }); at = path.dirname(at)) {
    missing.unshift(at);
    if (path.dirname(at) === at) break;
  }
  for (const at of missing) {
    try {
      mkdirSync(at, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
}
