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
 * `/proc/self/fd/PIN`.
 *
 * A folder stays open while its files are checked, so it is opened and verified once for all of
 * them (a walk lists a folder's files together). At most `MAX_HELD_DIRS` idle folders are kept:
 * a tree of any number of folders must not take as many descriptors, or the search itself (and
 * every other session of the bridge) would run out of them and files would go missing from
 * results without a word. A folder in use by a pending check is never closed under it (its
 * descriptor number could be reused by another folder). Running out of descriptors anyway is an
 * error of the tool call, never a silently shorter answer.
 */
import * as fs from "node:fs";
import { constants as C } from "node:fs";
import * as fsp from "node:fs/promises";
import * as path from "node:path";
import { isReachable } from "../workspace.js";
import { O_PATH, SAFE } from "../descriptor-paths.js";
import { isOutOfDescriptors, rethrowIfOutOfDescriptors } from "../out-of-descriptors.js";
import type { OpenedCandidate } from "./files.js";
import { fsPath } from "../raw-names.js";

/** `/proc/self/fd/N/name`, as bytes when the name is not valid UTF-8 (a walk's names, raw-names.ts). */
const nameIn = (fd: number, name: string) => fsPath(`/proc/self/fd/${fd}/${name}`);

/** Idle folder descriptors one search keeps for reuse. */
export const MAX_HELD_DIRS = 64;

interface HeldDir {
  fd: number;
  real: string;
  /** Checks under way that use `fd`. */
  users: number;
}

/** Checks listed paths of one workspace, keeping recently used folders open. Call `close()`. */
export class ShownPathCheck {
  /** Open folders, least recently used first (absolute lexical path → descriptor and real path). */
  private readonly held = new Map<string, HeldDir>();
  /** Folders refused (gone, a link, not a folder, outside): never opened again in this search. */
  private readonly refused = new Set<string>();
  private realRoot: Promise<string>;
  private readonly resolvedWorkspace: string;

  constructor(private readonly workspace: string) {
    this.resolvedWorkspace = path.resolve(workspace);
    this.realRoot = fsp.realpath(workspace);
    this.realRoot.catch(() => undefined); // awaited (and its error handled) only when a path is checked
  }

  /**
   * The folder `dir`, opened and verified on its descriptor, or `undefined` when refused; pair
   * with `release` before the next `await`, so at most one folder is in use at a time and the
   * idle ones beyond the bound can always be closed. Made blocking: opening a folder (`O_DIRECTORY`) and reading a `/proc/self/fd`
   * link never wait on another process, and are cheaper than two trips through libuv's thread pool.
   */
  private acquireDir(dir: string, root: string): HeldDir | undefined {
    if (this.refused.has(dir)) return undefined;
    const known = this.held.get(dir);
    if (known) {
      this.held.delete(dir); // most recently used goes last
      this.held.set(dir, known);
      known.users++;
      return known;
    }
    let fd: number;
    try {
      // The workspace path itself may be a link (e.g. /tmp → /private/tmp); below it, none is followed.
      const noFollow = path.resolve(dir) === this.resolvedWorkspace ? 0 : C.O_NOFOLLOW;
      fd = this.retryStarved(() => fs.openSync(fsPath(dir), C.O_RDONLY | C.O_DIRECTORY | noFollow));
    } catch (err) {
      rethrowIfOutOfDescriptors(err);
      this.refused.add(dir); // gone, a link, or not a folder
      return undefined;
    }
    let real: string | undefined;
    try {
      real = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      real = undefined;
    }
    if (real === undefined || !isReachable(root, real)) {
      fs.closeSync(fd);
      this.refused.add(dir);
      return undefined;
    }
    const opened: HeldDir = { fd, real, users: 1 };
    this.held.set(dir, opened);
    this.evictIdle();
    return opened;
  }

  private release(dir: HeldDir): void {
    dir.users--;
    if (dir.users === 0) this.evictIdle();
  }

  /**
   * `open()`, retried once after closing every idle folder when the process is out of
   * descriptors: the folders kept for speed give way before the search fails.
   */
  private retryStarved(open: () => number): number {
    try {
      return open();
    } catch (err) {
      if (!isOutOfDescriptors(err) || !this.closeIdle(0)) throw err;
      return open();
    }
  }

  /** Closes idle folders, least recently used first, until at most `keep` are held; whether any was closed. */
  private closeIdle(keep: number): boolean {
    let closed = false;
    for (const [key, dir] of this.held) {
      if (this.held.size <= keep) break;
      if (dir.users > 0) continue;
      this.held.delete(key);
      fs.closeSync(dir.fd);
      closed = true;
    }
    return closed;
  }

  /** Closes the least recently used idle folders beyond `MAX_HELD_DIRS`. */
  private evictIdle(): void {
    if (this.held.size > MAX_HELD_DIRS) this.closeIdle(MAX_HELD_DIRS);
  }

  /**
   * Whether `rel` (relative to the workspace, `/`-separated) is a regular file inside it. The
   * `lstat` is blocking, like the folder open: metadata of a name in a held folder, and no other
   * check may close the folder between the two.
   */
  async isShownFile(rel: string): Promise<boolean> {
    const abs = path.resolve(this.workspace, rel);
    const root = await this.realRoot;
    const dir = this.acquireDir(path.dirname(abs), root);
    if (!dir) return false;
    try {
      const name = path.basename(abs);
      // A hidden file (~/.netrc in a home-folder workspace) is a name in a reachable folder.
      if (!isReachable(root, path.join(dir.real, name))) return false;
      try {
        return fs.lstatSync(nameIn(dir.fd, name)).isFile();
      } catch (err) {
        rethrowIfOutOfDescriptors(err);
        return false;
      }
    } finally {
      this.release(dir);
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
   * wait (`O_NONBLOCK`: not even for a lease); each is microseconds, where a trip through
   * libuv's thread pool costs far more.
   */
  async openShownFile(abs: string): Promise<OpenedCandidate | undefined> {
    const root = await this.realRoot;
    const dir = this.acquireDir(path.dirname(abs), root);
    if (!dir) return undefined;
    try {
      const name = path.basename(abs);
      if (!isReachable(root, path.join(dir.real, name))) return undefined;
      let pin: number;
      try {
        pin = this.retryStarved(() => fs.openSync(nameIn(dir.fd, name), O_PATH | C.O_NOFOLLOW));
      } catch (err) {
        rethrowIfOutOfDescriptors(err);
        return undefined;
      }
      try {
        const st = fs.fstatSync(pin);
        if (!st.isFile()) return undefined;
        const fd = this.retryStarved(() => fs.openSync(`/proc/self/fd/${pin}`, C.O_RDONLY | SAFE));
        return { fd, size: st.size, close: () => fs.closeSync(fd) };
      } catch (err) {
        rethrowIfOutOfDescriptors(err);
        return undefined;
      } finally {
        fs.closeSync(pin);
      }
    } finally {
      this.release(dir);
    }
  }

  async close(): Promise<void> {
    for (const d of this.held.values()) fs.closeSync(d.fd); // a folder descriptor: closing it never waits
    this.held.clear();
  }
}
