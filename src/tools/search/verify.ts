/**
 * Whether a path a walk listed may be shown in a confined mode: it must be a regular file in a
 * folder that is really inside the workspace, now, and not in a path hidden from the tools.
 *
 * A walk reads folders by name, so a folder swapped for a link to the outside lists outside
 * names; and `realpath` cannot tell, since it resolves one component at a time and a swap between
 * two of its steps passes. So the folder is opened (`O_DIRECTORY | O_NOFOLLOW`: never a device,
 * never through a final link), its descriptor's real path is checked (`/proc/self/fd/N`), and the
 * name is looked up inside that descriptor (`/proc/self/fd/N/name`, `lstat`): a name that exists
 * only outside is not found there. Nothing but folders is ever opened.
 */
import { constants as C } from "node:fs";
import * as fsp from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import * as path from "node:path";
import { isReachable } from "../workspace.js";

/** Checks listed paths of one workspace, keeping each folder open while in use. Call `close()`. */
export class ShownPathCheck {
  private readonly dirs = new Map<string, Promise<{ handle: FileHandle; real: string } | undefined>>();
  private realRoot: Promise<string>;

  constructor(private readonly workspace: string) {
    this.realRoot = fsp.realpath(workspace);
    this.realRoot.catch(() => undefined); // awaited (and its error handled) only when a path is checked
  }

  private openDir(dir: string): Promise<{ handle: FileHandle; real: string } | undefined> {
    let opened = this.dirs.get(dir);
    if (!opened) {
      opened = (async () => {
        try {
          // The workspace path itself may be a link (e.g. /tmp → /private/tmp); below it, none is followed.
          const noFollow = path.resolve(dir) === path.resolve(this.workspace) ? 0 : C.O_NOFOLLOW;
          const handle = await fsp.open(dir, C.O_RDONLY | C.O_DIRECTORY | noFollow);
          const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
          if (real !== undefined && isReachable(await this.realRoot, real)) return { handle, real };
          await handle.close();
        } catch {
          // gone, a link, or not a folder
        }
        return undefined;
      })();
      this.dirs.set(dir, opened);
    }
    return opened;
  }

  /** Whether `rel` (relative to the workspace, `/`-separated) is a regular file inside it. */
  async isShownFile(rel: string): Promise<boolean> {
    const abs = path.resolve(this.workspace, rel);
    const dir = await this.openDir(path.dirname(abs));
    if (!dir) return false;
    const name = path.basename(abs);
    // A hidden file (~/.netrc in a home-folder workspace) is a name in a reachable folder.
    if (!isReachable(await this.realRoot, path.join(dir.real, name))) return false;
    try {
      return (await fsp.lstat(`/proc/self/fd/${dir.handle.fd}/${name}`)).isFile();
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    const all = [...this.dirs.values()];
    this.dirs.clear();
    await Promise.all(all.map(async (d) => (await d)?.handle.close().catch(() => undefined)));
  }
}
