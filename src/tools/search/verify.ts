/**
 * Whether a path a walk listed may be shown in a confined mode: it must be a regular file in a
 * folder that is really inside the workspace, now, and not in a path hidden from the tools.
 *
 * A walk reads folders by name, so a folder swapped for a link to the outside lists outside
 * names; and `realpath` cannot tell, since it resolves one component at a time and a swap between
 * two of its steps passes. So the folder is opened (`O_DIRECTORY | O_NOFOLLOW`: never a device,
 * never through a final link), its descriptor's real path is checked (`/proc/self/fd/N`), and the
 * name is looked up inside that descriptor (`/proc/self/fd/N/name`, `lstat`): a name that exists
 * only outside is not found there. A file is opened for reading the same way, by its name inside
 * the held folder: pinned first with `O_PATH | O_NOFOLLOW` (a link is not followed, a FIFO or a
 * device is not opened), its type read from the pin, and only a regular file reopened through
 * `/proc/self/fd/PIN`. The folders of one search stay open, so each is opened and verified once
 * however many of its files are read.
 */
import * as fs from "node:fs";
import { constants as C } from "node:fs";
import * as fsp from "node:fs/promises";
import * as path from "node:path";
import { isReachable } from "../workspace.js";
import { O_PATH, SAFE } from "../descriptor-paths.js";
import type { OpenedCandidate } from "./files.js";

/** Checks listed paths of one workspace, keeping each folder open while in use. Call `close()`. */
export class ShownPathCheck {
  /** Folders opened so far (absolute lexical path → descriptor and real path, or `undefined` when refused). */
  private readonly dirs = new Map<string, { fd: number; real: string } | undefined>();
  private realRoot: Promise<string>;

  constructor(private readonly workspace: string) {
    this.realRoot = fsp.realpath(workspace);
    this.realRoot.catch(() => undefined); // awaited (and its error handled) only when a path is checked
  }

  /**
   * The folder `dir`, opened once and verified on its descriptor. Made blocking: opening a folder
   * (`O_DIRECTORY`) and reading a `/proc/self/fd` link never wait on another process, and are
   * cheaper than two trips through libuv's thread pool.
   */
  private async openDir(dir: string): Promise<{ fd: number; real: string } | undefined> {
    if (this.dirs.has(dir)) return this.dirs.get(dir);
    const root = await this.realRoot;
    if (this.dirs.has(dir)) return this.dirs.get(dir); // opened by a call that went on meanwhile
    let opened: { fd: number; real: string } | undefined;
    try {
      // The workspace path itself may be a link (e.g. /tmp → /private/tmp); below it, none is followed.
      const noFollow = path.resolve(dir) === path.resolve(this.workspace) ? 0 : C.O_NOFOLLOW;
      const fd = fs.openSync(dir, C.O_RDONLY | C.O_DIRECTORY | noFollow);
      let real: string | undefined;
      try {
        real = fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        real = undefined;
      }
      if (real !== undefined && isReachable(root, real)) opened = { fd, real };
      else fs.closeSync(fd);
    } catch {
      // gone, a link, or not a folder
    }
    this.dirs.set(dir, opened);
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
      return (await fsp.lstat(`/proc/self/fd/${dir.fd}/${name}`)).isFile();
    } catch {
      return false;
    }
  }

  /**
   * Opens the regular file `abs` (absolute, a name a walk listed, not through a final link) for
   * reading, or `undefined` when it is not a regular file in a folder really inside the
   * workspace, is hidden, or is gone. `size` is the size seen on the pinned inode. The caller
   * closes it. Linux only (descriptor paths); elsewhere callers use `openForRead`.
   *
   * The three calls on the file are made blocking: an `O_PATH` open never blocks (no FIFO wait,
   * no device open), `fstat` is metadata, and reopening a regular file's pinned inode does not
   * wait; each is microseconds, where a trip through libuv's thread pool costs far more.
   */
  async openShownFile(abs: string): Promise<OpenedCandidate | undefined> {
    const dir = await this.openDir(path.dirname(abs));
    if (!dir) return undefined;
    const name = path.basename(abs);
    if (!isReachable(await this.realRoot, path.join(dir.real, name))) return undefined;
    let pin: number;
    try {
      pin = fs.openSync(`/proc/self/fd/${dir.fd}/${name}`, O_PATH | C.O_NOFOLLOW);
    } catch {
      return undefined;
    }
    try {
      const st = fs.fstatSync(pin);
      if (!st.isFile()) return undefined;
      const fd = fs.openSync(`/proc/self/fd/${pin}`, C.O_RDONLY | SAFE);
      return { fd, size: st.size, close: () => fs.closeSync(fd) };
    } catch {
      return undefined;
    } finally {
      fs.closeSync(pin);
    }
  }

  async close(): Promise<void> {
    for (const d of this.dirs.values()) if (d) fs.close(d.fd, () => undefined);
    this.dirs.clear();
  }
}
