/**
 * Descriptor paths: on Linux `/proc/self/fd/N` names the very inode descriptor N holds, and
 * `/proc/self/fd/N/name` a name inside the folder N holds. They stand in for the `openat` family
 * Node does not offer, and let a real path be read from the kernel instead of resolved by name.
 */
import { constants as fsc } from "node:fs";
import * as fs from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";

const { O_NONBLOCK, O_NOCTTY, O_DIRECTORY } = fsc;
/** `O_PATH` of Linux (x86, arm, and the generic ABI); Node's `fs.constants` lacks it. */
export const O_PATH = 0o10000000;
/** Never block on a FIFO, never take a terminal as controlling terminal. */
export const SAFE = O_NONBLOCK | O_NOCTTY;
/** Symbolic links followed in one resolution at most, as the kernel does (`ELOOP`). */
export const MAX_LINK_HOPS = 40;

let descriptorPaths: boolean | undefined;

/** For tests: `false` forces the checks by name used where `/proc/self/fd` is missing; `undefined` probes again. */
export function useDescriptorPaths(enabled: boolean | undefined): void {
  descriptorPaths = enabled;
}

/** Whether `/proc/self/fd/N` names opened descriptors here (Linux with /proc mounted). */
export async function haveDescriptorPaths(): Promise<boolean> {
  if (descriptorPaths === undefined) {
    descriptorPaths = false;
    if (process.platform === "linux") {
      let probe: FileHandle | undefined;
      try {
        probe = await fs.open("/", O_PATH | O_DIRECTORY);
        descriptorPaths = (await fs.readlink(`/proc/self/fd/${probe.fd}`)) === "/";
      } catch {
        descriptorPaths = false;
      } finally {
        await probe?.close().catch(() => undefined);
      }
    }
  }
  return descriptorPaths;
}

export const procPath = (h: FileHandle, name?: string) => (name === undefined ? `/proc/self/fd/${h.fd}` : `/proc/self/fd/${h.fd}/${name}`);

/** The real path of what `h` holds, read from the kernel (not from the name it was opened by). */
export async function realPathOf(h: FileHandle): Promise<string> {
  return fs.readlink(procPath(h));
}

