/**
 * Where checkpoints go without a session log (`--no-session-log`): one private temporary folder
 * per process (0700, made on first use), removed when the process exits, hidden from bash and the file tools like the session root. Sessions die with the
 * process there, and so do their checkpoints.
 *
 * A process killed outright (SIGKILL, a crash) runs no exit listener, and its folder — copies
 * of the user's files — would stay in TMPDIR for good. So each folder holds an owner line naming
 * its process (store/process-owner.ts), and the first process to make its own folder removes the
 * folders of this uid whose process is provably gone; one whose owner cannot be told (another
 * host's or pid namespace's, no whole owner line yet) is kept.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { hideFromSandbox } from "../../sandbox/hidden.js";
import { tempFolder } from "../../temp-folder.js";
import { alive, ownerLine, parseOwner } from "../store/process-owner.js";

const PREFIX = "harness-checkpoints-";
/** The file in a folder naming the process it is for. */
const OWNER = "owner";

let folder: string | undefined;

/** Whether this process made its private folder yet (no checkpoint can be in it before). */
export function privateFolderMade(): boolean {
  return folder !== undefined;
}

export function privateCheckpointFolder(): string {
  if (folder === undefined) {
    const base = tempFolder();
    const made = fs.mkdtempSync(path.join(base, PREFIX));
    fs.chmodSync(made, 0o700);
    folder = made;
    // Like the session root: no sandboxed command, and no file tool, reaches it.
    hideFromSandbox(made);
    process.once("exit", () => {
      // Best effort: under a low open-file limit the removal may find no descriptor to read the
      // folder with (EMFILE), and a throw here would skip every exit listener after this one.
      try {
        fs.rmSync(made, { recursive: true, force: true });
      } catch {
        // left in TMPDIR, private (0700)
      }
    });
    try {
      fs.writeFileSync(path.join(made, OWNER), ownerLine(), { mode: 0o600, flag: "wx" });
    } catch {
      // a full disk: the folder is removed at exit all the same, only a kill would leave it
    }
    // Off the caller's turn: TMPDIR may hold thousands of names.
    setImmediate(() => void pruneLeftFolders(base, made));
  }
  return folder;
}

/** Removes the checkpoint folders in `base` (but `mine`) of this uid whose process is gone; best effort. */
export async function pruneLeftFolders(base: string, mine?: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.promises.readdir(base);
  } catch {
    return;
  }
  for (const name of names) {
    const dir = path.join(base, name);
    if (!name.startsWith(PREFIX) || dir === mine) continue;
    try {
      const st = await fs.promises.lstat(dir);
      if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
      const owner = parseOwner(await ownerText(path.join(dir, OWNER)));
      if (owner && !alive(owner)) await fs.promises.rm(dir, { recursive: true, force: true });
    } catch {
      // gone meanwhile, no owner file, or not ours to remove: left as it is
    }
  }
}

/** A folder's owner line: a regular file only, never through a link, never blocking on a FIFO, a few hundred bytes at most. */
async function ownerText(file: string): Promise<string> {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  const handle = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.size > 4096) return "";
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}
