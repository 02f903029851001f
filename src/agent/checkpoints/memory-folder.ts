/**
 * Where checkpoints go without a session log (`--no-session-log`): one private temporary folder
 * per process (0700, made on first use), removed when the process exits, hidden from bash and the file tools like the session root. Sessions die with the
 * process there, and so do their checkpoints.
 *
 * @module
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { hideFromSandbox } from "../../sandbox/hidden.js";

let folder: string | undefined;

export function privateCheckpointFolder(): string {
  if (folder === undefined) {
    const made = fs.mkdtempSync(path.join(os.tmpdir(), "harness-checkpoints-"));
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
  }
  return folder;
}
