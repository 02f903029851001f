/**
 * Writing a checkpoint back into the workspace, confined the way the file tools are
 * (tools/confined-fs.ts) and stricter: a rewind never follows a symbolic link at all.
 *
 * Invariant: nothing is created, written, renamed or removed outside the real workspace root,
 * and no symbolic link — planted by the model before the rewind or swapped in while it runs —
 * is written through. Every folder from the root down is opened one component at a time with
 * `O_NOFOLLOW` (made when missing), relative to the descriptor of the one before
 * (`/proc/self/fd/N/name`), and its real path, read from the kernel, must be exactly the
 * expected one. The content goes to a new temporary file made `O_CREAT | O_EXCL | O_NOFOLLOW`
 * in that held folder, is synced, and is renamed over the name: `rename` replaces whatever is
 * there (a link included) without following it. A removal is an `unlink` in the held folder,
 * which removes a link itself, never its target. Before the rename or unlink the held folder's
 * real path is checked again, so a folder moved out of the workspace meanwhile is not written.
 *
 * Linux only (descriptor paths); elsewhere a rewind refuses to write files.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY } = fs.constants;
/** Linux's `O_PATH` (tools/descriptor-paths.ts). */
const O_PATH = 0o10000000;

/** Thrown when a path cannot be written back safely (a link or a file where a folder must be, a folder moved away). */
export class RestoreRefused extends Error {}

const proc = (fd: number, name?: string) => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

/** Whether this platform offers descriptor paths (Linux with /proc). */
export function canRestore(): boolean {
  if (process.platform !== "linux") return false;
  try {
    const fd = fs.openSync("/", O_PATH | O_DIRECTORY);
    try {
      return fs.readlinkSync(proc(fd)) === "/";
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * Opens the folder holding `rel` under the real root `root`, creating missing folders
 * (`create`), never through a link; `undefined` when a folder is missing and `create` is off.
 * The caller closes the descriptor.
 */
function openParent(root: string, rel: string, create: boolean): { fd: number; real: string } | undefined {
  const parts = path.dirname(rel).split(path.sep).filter((p) => p !== "" && p !== ".");
  let fd = fs.openSync(root, O_PATH | O_DIRECTORY);
  let real = root;
  try {
    if (fs.readlinkSync(proc(fd)) !== root) throw new RestoreRefused(`the workspace ${root} moved`);
    for (const part of parts) {
      if (part === "..") throw new RestoreRefused(`${rel} is not inside the workspace`);
      const at = proc(fd, part);
      let next: number;
      try {
        next = fs.openSync(at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ELOOP" || code === "ENOTDIR") throw new RestoreRefused(`${path.join(real, part)} is not a folder (a symbolic link or a file)`);
        if (code !== "ENOENT") throw error;
        if (!create) return undefined;
        try {
          fs.mkdirSync(at, 0o777);
        } catch (made) {
          if ((made as NodeJS.ErrnoException).code !== "EEXIST") throw made;
        }
        try {
          next = fs.openSync(at, O_PATH | O_DIRECTORY | O_NOFOLLOW);
        } catch {
          throw new RestoreRefused(`${path.join(real, part)} changed while it was made`);
        }
      }
      const expected = path.join(real, part);
      if (fs.readlinkSync(proc(next)) !== expected) {
        fs.closeSync(next);
        throw new RestoreRefused(`${expected} is not where it was (a folder was moved or swapped)`);
      }
      fs.closeSync(fd);
      fd = next;
      real = expected;
    }
    return { fd, real };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** The held folder must still be the one at `real`: else it moved (maybe out of the workspace) since it was opened. */
function stillThere(fd: number, real: string): void {
  if (fs.readlinkSync(proc(fd)) !== real) throw new RestoreRefused(`${real} moved while the rewind wrote it`);
}

/** Replaces whatever is at `rel` by `make` (which fills the temporary name it is given) through a rename in the held folder. */
function replaceWith(root: string, rel: string, make: (tempAt: string) => void): void {
  const parent = openParent(root, rel, true)!;
  const name = path.basename(rel);
  const temp = `.${name.slice(0, 200)}.rewind-${randomBytes(6).toString("hex")}`;
  try {
    const existing = fs.lstatSync(proc(parent.fd, name), { throwIfNoEntry: false });
    if (existing?.isDirectory()) throw new RestoreRefused(`${rel} is a folder now`);
    make(proc(parent.fd, temp));
    try {
      stillThere(parent.fd, parent.real);
      fs.renameSync(proc(parent.fd, temp), proc(parent.fd, name));
    } catch (error) {
      fs.rmSync(proc(parent.fd, temp), { force: true });
      throw error;
    }
  } finally {
    fs.closeSync(parent.fd);
  }
}

/** Writes `bytes` with permission bits `mode` at `rel` (a link or file there is replaced, not written through). */
export function restoreFile(root: string, rel: string, bytes: Buffer, mode: number): void {
  replaceWith(root, rel, (at) => {
    const fd = fs.openSync(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    try {
      for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
      fs.fchmodSync(fd, mode & 0o7777);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  });
}

/** Makes `rel` a symbolic link to `target` again (the link itself; nothing is written where it points). */
export function restoreLink(root: string, rel: string, target: string): void {
  replaceWith(root, rel, (at) => fs.symlinkSync(target, at));
}

/** Removes the file or link at `rel` (a link itself, not its target); `false` when nothing was there. */
export function removePath(root: string, rel: string): boolean {
  const parent = openParent(root, rel, false);
  if (!parent) return false;
  const name = path.basename(rel);
  try {
    const existing = fs.lstatSync(proc(parent.fd, name), { throwIfNoEntry: false });
    if (!existing) return false;
    if (existing.isDirectory()) throw new RestoreRefused(`${rel} is a folder now`);
    stillThere(parent.fd, parent.real);
    fs.unlinkSync(proc(parent.fd, name));
    return true;
  } finally {
    fs.closeSync(parent.fd);
  }
}

