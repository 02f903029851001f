/**
 * The system's folder for temporary files, named as node's `os.tmpdir()` names it on POSIX:
 * `TMPDIR`, else `TMP`, else `TEMP`, else `/tmp`, without a trailing `/`. Its own module
 * because the sandbox names paths under it before the `initialize` response, and loading
 * node:os only for this is a measurable share of that start (bench/README.md, "Cold start,
 * round 7"); the checkpoints' private folder is named by it too. test/temp-folder.test.ts holds
 * it to `os.tmpdir()`.
 *
 * @module
 */
export function tempFolder(): string {
  const { TMPDIR, TMP, TEMP } = process.env;
  const folder = TMPDIR || TMP || TEMP || "/tmp";
  return folder.length > 1 && folder.endsWith("/") ? folder.slice(0, -1) : folder;
}
