/**
 * The paths hidden from sandboxed commands and from the file tools: credential stores in the
 * home folder, `HARNESS_SANDBOX_HIDE`, the session root. bubblewrap hides them by mounting over
 * them (bwrap.ts); the Landlock confinement never grants them (landlock.ts); the file tools
 * refuse them (`isHiddenPath`).
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { tempFolder } from "../temp-folder.js";
import * as path from "node:path";
import { homeFolder } from "../home-folder.js";
import { isNormalAbsolute, joinedPath, resolvedPath } from "../normal-path.js";
import { isInside, isInsideNormal } from "../tools/path-inside.js";

/**
 * Credential stores hidden from sandboxed commands, relative to the home folder: a folder is
 * replaced by an empty tmpfs, a file by an empty one. `HARNESS_SANDBOX_HIDE` (paths separated by
 * `:`) adds more; the server adds the session root; the bridges' private folder is always hidden
 * (`privateFolderName`).
 */
export const HIDDEN_HOME_PATHS: readonly string[] = [
  ".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".gnupg", ".netrc", ".git-credentials",
  ".config/gh", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
];

const extraHidden = new Set<string>();
/** Hides `p` from sandboxed commands too (the server calls it with the session root). */
export function hideFromSandbox(p: string): void {
  const before = extraHidden.size;
  extraHidden.add(resolvedPath(p));
  if (extraHidden.size !== before) extraHiddenVersion += 1;
}
/** Bumped when `extraHidden` grows, so the file tools' cached list knows it is stale. */
let extraHiddenVersion = 0;

/**
 * The hidden paths as the file tools check them (each resolved: in normal form), and for each
 * workspace those that count below it.
 */
let hiddenForTools: { key: string; paths: string[]; below: Map<string, string[]> } | undefined;
/** Workspaces whose relevant hidden paths are kept (a bridge serves a few). */
const MAX_ROOTS_KEPT = 16;

/**
 * Whether the real path `real` is in a hidden path (a credential store, HARNESS_SANDBOX_HIDE,
 * the session root): the file tools refuse those too, so a workspace that holds one (the home
 * folder as workspace holds ~/.ssh) does not hand it to the model. A hidden path that holds
 * `root` (the workspace) does not count below it, as in the sandbox. Both the path as given and
 * its real path count, so a store created after the first check is still covered by name.
 */
export function isHiddenPath(real: string, root: string, env: NodeJS.ProcessEnv = process.env): boolean {
  // Called for every path a search shows: the key is cheap, the list is built when it changes.
  const key = wantedHiddenKey(env);
  if (hiddenForTools?.key !== key) {
    const paths = new Set<string>();
    for (const p of wantedHidden(env)) {
      paths.add(path.resolve(p));
      try {
        paths.add(realpathSync(p));
      } catch {
        // not there yet: its name still counts
      }
    }
    hiddenForTools = { key, paths: [...paths], below: new Map() };
  }
  let below = hiddenForTools.below.get(root);
  if (!below) {
    if (hiddenForTools.below.size >= MAX_ROOTS_KEPT) hiddenForTools.below.clear();
    below = hiddenForTools.paths.filter((h) => !isInside(h, root));
    hiddenForTools.below.set(root, below);
  }
  // `real` is checked for normal form once, not once per hidden path (a search asks for each file it shows).
  if (isNormalAbsolute(real)) return below.some((h) => isInsideNormal(h, real));
  return below.some((h) => isInside(h, real));
}

/**
 * The private folder's shared name (landlock-helper.ts `privateFolder`; a fresh folder it falls
 * back to is added with `hideFromSandbox`). Invariant: no sandboxed command can write it. It
 * holds the Landlock helper, checked and then executed (a command that could swap it between
 * the two would run the next command unconfined), and the remembered probe verdicts
 * (verdict-cache.ts). A workspace that holds it (/tmp, or a home folder holding TMPDIR) would
 * grant it: hidden, bubblewrap mounts over it and Landlock refuses such a workspace.
 */
export function privateFolderName(): string {
  // Not normalized again (normal-path.ts: why): the start-up path asks for it where bubblewrap is off.
  return joinedPath(tempFolder(), `harness-bridge-${process.getuid?.() ?? "user"}`);
}

/**
 * Where the Landlock helper goes when the private folder's mount is `noexec`
 * (landlock-helper.ts `helperFolder`): this uid's runtime folder, then its cache folder. Hidden
 * always, not only once chosen, for the private folder's reason: the file tools must never
 * write the helper between its check and its exec, whichever turn first needs it.
 */
export function helperFallbackFolders(env: NodeJS.ProcessEnv): string[] {
  const folders: string[] = [];
  if (env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)) folders.push(path.join(env.XDG_RUNTIME_DIR, "harness-bridge"));
  const cache = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : underHome(homeFolder(env), ".cache");
  folders.push(path.join(cache, "harness-bridge", "sandbox"));
  return folders;
}

/**
 * `rel` (a relative path in normal form) below `home` (from `homeFolder`): what `path.join`
 * gives, by concatenation. The rules name a few dozen paths in the home folder on the start-up
 * path, and `path.join` normalizes each one again character by character, in code that is
 * still interpreted that early (bench/README.md, "Why the code does this").
 */
export function underHome(home: string, rel: string): string {
  return home === "/" ? `/${rel}` : `${home}/${rel}`;
}

/**
 * Changes whenever `wantedHidden(env)` would give another list (its inputs: the home folder,
 * `HARNESS_SANDBOX_HIDE`, the temporary folder that names the private one, the paths added by
 * `hideFromSandbox`), without building the list: for callers that only ask whether it changed.
 */
export function wantedHiddenKey(env: NodeJS.ProcessEnv): string {
  return `${env.HOME}\0${env.HARNESS_SANDBOX_HIDE}\0${tempFolder()}\0${env.XDG_RUNTIME_DIR}\0${env.XDG_CACHE_HOME}\0${extraHiddenVersion}`;
}

export function wantedHidden(env: NodeJS.ProcessEnv): string[] {
  const home = homeFolder(env);
  return [
    privateFolderName(),
    ...HIDDEN_HOME_PATHS.map((p) => underHome(home, p)),
    ...(env.HARNESS_SANDBOX_HIDE ?? "").split(":").filter((p) => path.isAbsolute(p)),
    // After the credential stores: a refusal names the first hidden path a workspace holds, and
    // one that exists says more than a folder the bridge may make (hiddenRealPaths).
    ...helperFallbackFolders(env),
    ...extraHidden,
  ];
}

/**
 * The real paths of the existing paths to hide, each once. What the Landlock rules need (they
 * never grant a hidden path, file or folder alike), so no `stat` of each: that is bubblewrap's
 * (`hiddenPaths`), and this runs on the start-up path where bubblewrap is not there.
 */
export function hiddenRealPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set<string>();
  // The helper's fallback folders too: not there yet, a command confined in a workspace that
  // holds one could make it itself (0700, this uid: it passes the helper's checks) and put files
  // in it, which a later bridge whose TMPDIR is noexec would then run its helper from.
  const fallbacks = helperFallbackFolders(env);
  for (const p of wantedHidden(env)) {
    if (!existsSync(p)) {
      // The bridge's own folders (the session root) are made when first needed, maybe inside
      // the workspace: judged by their path from the start, so `initialize` and every turn agree.
      const toBe = extraHidden.has(p) || fallbacks.includes(p) ? realPathToBe(p) : undefined;
      if (toBe) found.add(toBe);
      continue; // most are not there: no exception to build (see landlock.ts `real`)
    }
    try {
      found.add(realpathSync.native(p));
    } catch {
      // not there: nothing to hide
    }
  }
  return [...found];
}

/** The real path `p` (absolute, normal form) will have once made: its nearest existing ancestor's real path and the rest. */
function realPathToBe(p: string): string | undefined {
  for (let parent = path.dirname(p), rest = path.basename(p); parent !== p; p = parent, parent = path.dirname(parent), rest = path.join(path.basename(p), rest)) {
    if (!existsSync(parent)) continue;
    try {
      return path.join(realpathSync.native(parent), rest);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Whether the real path `real` is (or will be) one of the bridge's own hidden folders (`hideFromSandbox`: the session root). */
export function isBridgeFolder(real: string): boolean {
  for (const p of extraHidden) {
    const own = existsSync(p) ? realpathSync.native(p) : realPathToBe(p);
    if (own === real) return true;
  }
  return false;
}

/** The existing paths to hide, each with whether it is a folder (bubblewrap hides the two differently). */
export function hiddenPaths(env: NodeJS.ProcessEnv = process.env): { path: string; folder: boolean }[] {
  const found: { path: string; folder: boolean }[] = [];
  for (const p of hiddenRealPaths(env)) {
    try {
      found.push({ path: p, folder: statSync(p).isDirectory() });
    } catch {
      // gone since: nothing to hide
    }
  }
  return found;
}

