/**
 * The Landlock helper's executable (helper/landlock-exec.c): taken from the single
 * executable's asset `landlock-exec`, written once to a private folder, and compared byte for
 * byte with the helper this build carries before every exec.
 *
 * Where its bytes come from, and why they are trusted:
 * - in the single executable: the SEA asset, a part of the executable's own file, as
 *   trustworthy as the code reading it (whoever could change the one could change the other,
 *   and a sha256 compiled into the same file would change with it); scripts/build.mjs embeds
 *   the helper it compiled and its sha256 (`__LANDLOCK_HELPER_SHA256__`), which names the file;
 * - run from source (the tests) or as a plain bundle: build/sandbox/landlock-exec-ARCH, a file
 *   of its own, so it is checked against the sha256 compiled into the bundle (or, from source,
 *   the sha256 file the build wrote beside it: scripts/sandbox-helper.mjs) and a changed file is
 *   never run.
 * So node:crypto is loaded only where a helper file is read (not by the single executable):
 * loading it is a few milliseconds of the bridge's start-up (bench/README.md, "Why the code does
 * this"), on the path of the Landlock probe that `initialize` awaits.
 *
 * The private folder: `<tmpdir>/harness-bridge-<uid>`, created 0700, used only if it is a real
 * folder (not a link), owned by this uid and closed to others — a folder someone else made in
 * a shared /tmp is never used (a fresh mkdtemp folder is, instead). The file is written under a
 * unique name (temp-name.ts) and renamed into place, so a reader never sees half of it; a killed
 * writer's leftover goes with the verdicts' prune (verdict-cache.ts `pruneVerdicts`).
 */
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tempFolder } from "../temp-folder.js";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { tempSibling } from "../temp-name.js";
import { noexecMountOf } from "./exec-mount.js";
import { helperFallbackFolders, hideFromSandbox, privateFolderName } from "./hidden.js";
import { TEMP_FOLDER_FAILURE, failedForWantOfDescriptors } from "./status.js";

/** Set by scripts/build.mjs; undefined when run from source. */
declare const __LANDLOCK_HELPER_SHA256__: string | undefined;

const sha256 = (bytes: Uint8Array) => process.getBuiltinModule("node:crypto").createHash("sha256").update(bytes).digest("hex");

/** The helper's bytes and their sha256 (a helper file's bytes checked against it already), or why there are none. */
function helperSource(): { bytes: Buffer; sha: string } | { missing: string } {
  const compiled = typeof __LANDLOCK_HELPER_SHA256__ === "string" ? __LANDLOCK_HELPER_SHA256__ : undefined;
  try {
    const sea = require("node:sea") as { isSea(): boolean; getRawAsset(key: string): ArrayBuffer };
    if (sea.isSea() && compiled) return { bytes: Buffer.from(sea.getRawAsset("landlock-exec")), sha: compiled };
  } catch {
    // not a single executable: the helper is a file of the build
  }
  const name = `landlock-exec-${process.arch}`;
  // From source: src/sandbox/ → ../../build/sandbox; as a bundle (build/harness-bridge.cjs): build/sandbox.
  const here = path.dirname(fileURLToPath(import.meta.url));
  const dirs = [path.join(here, "..", "..", "build", "sandbox"), path.join(here, "sandbox")];
  for (const dir of dirs) {
    const file = path.join(dir, name);
    let found: { bytes: Buffer; sha: string };
    try {
      found = { bytes: readFileSync(file), sha: compiled ?? readFileSync(`${file}.sha256`, "utf8").trim() };
    } catch {
      continue; // try the next place
    }
    if (sha256(found.bytes) !== found.sha) throw new Error(`the Landlock helper ${file} does not match its sha256`);
    return found;
  }
  return { missing: `this build has no Landlock helper for ${process.platform}-${process.arch} (build/sandbox/${name}: run npm run build)` };
}

/**
 * The sha256 of the helper this build runs, without reading or hashing its bytes (on the
 * start-up path: verdict-cache.ts keys a remembered probe verdict with it): the one compiled in,
 * or from source the sha256 file beside the helper. Only a name: `verifiedHelper` checks the
 * bytes before every exec. Undefined where the build has no helper.
 */
export function helperIdentity(): string | undefined {
  if (typeof __LANDLOCK_HELPER_SHA256__ === "string") return __LANDLOCK_HELPER_SHA256__;
  const here = path.dirname(fileURLToPath(import.meta.url));
  try {
    return readFileSync(path.join(here, "..", "..", "build", "sandbox", `landlock-exec-${process.arch}.sha256`), "utf8").trim();
  } catch {
    return undefined;
  }
}

/** Whether `dir` is this uid's own folder, closed to everyone else. */
function isPrivateFolder(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

let privateDir: { base: string; dir: string } | undefined;
/** This uid's private folder for the helper and the commands' temporary folders (see above). */
export function privateFolder(): string {
  const base = tempFolder();
  if (privateDir?.base === base && isPrivateFolder(privateDir.dir)) return privateDir.dir;
  const shared = privateFolderName();
  // Made only when it is not there (a start where bubblewrap is off gets here before the
  // response, and a mkdir failing with EEXIST costs an exception each time).
  let dir = isPrivateFolder(shared) ? shared : undefined;
  if (!dir) {
    try {
      mkdirSync(shared, { mode: 0o700 });
    } catch {
      // there already (checked below), or not makeable (a fresh folder below)
    }
    dir = isPrivateFolder(shared) ? shared : inTempFolder(base, () => mkdtempSync(path.join(base, "harness-bridge-")));
  }
  privateDir = { base, dir };
  // Hidden from sandboxed commands like the shared name (hidden.ts `privateFolderName`: why).
  if (privateDir.dir !== shared) hideFromSandbox(privateDir.dir);
  return privateDir.dir;
}

let execFolder: { from: string; dir: string } | undefined;
/**
 * Where the helper is written: the private folder, unless no program may run from its mount
 * (exec-mount.ts: the exec would fail with a bare EACCES); then the first of
 * `helperFallbackFolders` (hidden.ts: hidden from commands and file tools like the private one) that
 * is this uid's, closed to others and on a mount that allows running programs; else an error
 * naming the `noexec` mount and the fix.
 */
function helperFolder(): string {
  const own = privateFolder();
  const noexec = noexecMountOf(own);
  if (!noexec) return own;
  if (execFolder?.from === own && isPrivateFolder(execFolder.dir)) return execFolder.dir;
  const tried: string[] = [];
  for (const dir of helperFallbackFolders(process.env)) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch {
      // not makeable here (a read-only or missing home): the next one
    }
    if (isPrivateFolder(dir) && !noexecMountOf(dir)) {
      hideFromSandbox(dir);
      execFolder = { from: own, dir };
      return dir;
    }
    tried.push(dir);
  }
  throw new Error(
    `the temporary folder ${own} ${TEMP_FOLDER_FAILURE} (it is on ${noexec}, mounted noexec: no program may run from it; ` +
      `nor from ${tried.join(" or ")}, which are not this user's private folders on a mount that allows it); TMPDIR names where it goes, or XDG_RUNTIME_DIR`,
  );
}

let source: { bytes: Buffer; sha: string } | undefined;

/**
 * The helper's path, its bytes just compared with the trusted ones (rewritten from them if they
 * differ); throws with the reason when there is no trustworthy helper. The check and the exec
 * are two steps: what could change the file between them is this uid outside any sandbox (a
 * sandboxed command cannot write the private folder), which could as well change the bridge
 * itself.
 */
export function verifiedHelper(): string {
  if (!source) {
    const found = helperSource();
    if ("missing" in found) throw new Error(found.missing);
    source = found;
  }
  const file = path.join(helperFolder(), `landlock-exec-${source.sha.slice(0, 16)}`);
  if (!fileHas(file, source.bytes)) {
    // Bridges of other PID namespaces may share this folder (temp-name.ts): a name of this write's own.
    const tmp = tempSibling(file);
    const bytes = source.bytes;
    inTempFolder(path.dirname(file), () => {
      try {
        writeFileSync(tmp, bytes, { mode: 0o700, flag: "wx" });
        renameSync(tmp, file);
      } catch (error) {
        // A full folder keeps what was written: gone at once, not an hour later, so the next start finds the room it had.
        rmSync(tmp, { force: true });
        throw error;
      }
    });
    if (!fileHas(file, source.bytes)) throw new Error(`the Landlock helper written to ${file} is not the one this build carries`);
  }
  return file;
}

/** `use()`, a failure of it named as the temporary folder's (status.ts `TEMP_FOLDER_FAILURE`: why). */
function inTempFolder<T>(folder: string, use: () => T): T {
  try {
    return use();
  } catch (error) {
    const message = (error as Error).message;
    if (failedForWantOfDescriptors(message)) throw error; // the open-file limit's, not the folder's
    throw new Error(`the temporary folder ${folder} ${TEMP_FOLDER_FAILURE} (${message}); TMPDIR names where it goes`);
  }
}

/** Whether `file` is this uid's, not writable by others, and holds exactly `bytes`. */
function fileHas(file: string, bytes: Buffer): boolean {
  try {
    const st = lstatSync(file);
    return st.isFile() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0 && st.size === bytes.length && readFileSync(file).equals(bytes);
  } catch {
    return false;
  }
}
