/**
 * The bubblewrap sandbox of `bash` in `workspace-write` mode, and what the bridge reports of it.
 *
 * Invariant: a command in the sandbox holds no capability (a user namespace, `--cap-drop ALL`,
 * so even a bridge running as root gives it none: no remount, no umount), sees only its own
 * processes (a PID namespace with a fresh /proc: not the bridge, not its environment), cannot
 * write outside the workspace and a private /tmp (the rest is a read-only view), cannot read the
 * credential stores hidden below, has no controlling terminal (`--new-session`) and dies with
 * the bridge (`--die-with-parent`). Without a working sandbox, `bash` in `workspace-write` fails
 * closed (see bash.ts). The network is not restricted.
 *
 * Executables are found at fixed system locations, never through PATH or in the workspace.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { isInside } from "./path-inside.js";

/** Where bwrap is looked for (`HARNESS_BWRAP`, an absolute path, comes first). */
export const BWRAP_LOCATIONS: readonly string[] = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];
/** Where bash is looked for. */
export const BASH_LOCATIONS: readonly string[] = ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"];
/**
 * Credential stores hidden from sandboxed commands, relative to the home folder: a folder is
 * replaced by an empty tmpfs, a file by an empty one. `HARNESS_SANDBOX_HIDE` (paths separated by
 * `:`) adds more; the server adds the session root.
 */
export const HIDDEN_HOME_PATHS: readonly string[] = [
  ".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".gnupg", ".netrc", ".git-credentials",
  ".config/gh", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
];

const isExecutableFile = (p: string) => {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
};

/** The bwrap to use, or null: `HARNESS_BWRAP` when it is an absolute path (`off` or another value: none), else the first of `BWRAP_LOCATIONS`. */
export function findBwrap(env: NodeJS.ProcessEnv = process.env): string | null {
  const chosen = env.HARNESS_BWRAP;
  if (chosen !== undefined && chosen !== "") return path.isAbsolute(chosen) && isExecutableFile(chosen) ? chosen : null;
  return BWRAP_LOCATIONS.find(isExecutableFile) ?? null;
}

let bashPath: string | undefined;
/** The absolute path of bash (looked up once). */
export function findBash(): string {
  bashPath ??= BASH_LOCATIONS.find(isExecutableFile) ?? "/bin/bash";
  return bashPath;
}

const extraHidden = new Set<string>();
/** Hides `p` from sandboxed commands too (the server calls it with the session root). */
export function hideFromSandbox(p: string): void {
  const before = extraHidden.size;
  extraHidden.add(path.resolve(p));
  if (extraHidden.size !== before) extraHiddenVersion += 1;
}
/** Bumped when `extraHidden` grows, so the file tools' cached list knows it is stale. */
let extraHiddenVersion = 0;

let hiddenForTools: { key: string; paths: string[] } | undefined;

/**
 * Whether the real path `real` is in a hidden path (a credential store, HARNESS_SANDBOX_HIDE,
 * the session root): the file tools refuse those too, so a workspace that holds one (the home
 * folder as workspace holds ~/.ssh) does not hand it to the model. A hidden path that holds
 * `root` (the workspace) does not count below it, as in the sandbox. Both the path as given and
 * its real path count, so a store created after the first check is still covered by name.
 */
export function isHiddenPath(real: string, root: string, env: NodeJS.ProcessEnv = process.env): boolean {
  // Called for every path a search shows: the key is cheap, the list is built when it changes.
  const key = `${env.HOME}\0${env.HARNESS_SANDBOX_HIDE}\0${extraHiddenVersion}`;
  if (hiddenForTools?.key !== key) {
    const paths = new Set<string>();
    for (const p of wantedHidden(env)) {
      paths.add(path.resolve(p));
      try {
        paths.add(fs.realpathSync(p));
      } catch {
        // not there yet: its name still counts
      }
    }
    hiddenForTools = { key, paths: [...paths] };
  }
  return hiddenForTools.paths.some((h) => !isInside(h, root) && isInside(h, real));
}

function wantedHidden(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME && path.isAbsolute(env.HOME) ? env.HOME : os.homedir();
  return [
    ...HIDDEN_HOME_PATHS.map((p) => path.join(home, p)),
    ...(env.HARNESS_SANDBOX_HIDE ?? "").split(":").filter((p) => path.isAbsolute(p)),
    ...extraHidden,
  ];
}

/** The existing paths to hide, each with whether it is a folder. */
export function hiddenPaths(env: NodeJS.ProcessEnv = process.env): { path: string; folder: boolean }[] {
  const found = new Map<string, boolean>();
  for (const p of wantedHidden(env)) {
    try {
      const real = fs.realpathSync(p);
      found.set(real, fs.statSync(real).isDirectory());
    } catch {
      // not there: nothing to hide
    }
  }
  return [...found].map(([p, folder]) => ({ path: p, folder }));
}

/** bubblewrap's arguments for a command in `workspace` (a real path); see the invariant above. */
export function bwrapArgs(workspace: string, env: NodeJS.ProcessEnv = process.env): string[] {
  // Mounts apply in order. A hidden path inside the workspace (workspace = $HOME, ~/.ssh) is
  // hidden after the workspace is bound, or the bind would show it again; one that holds the
  // workspace is hidden before, so the workspace stays visible inside the emptied folder.
  const hidden = hiddenPaths(env);
  const holdsWorkspace = (p: string) => isInside(p, workspace);
  const hide = (list: typeof hidden) => list.flatMap((h) => (h.folder ? ["--tmpfs", h.path] : ["--ro-bind", "/dev/null", h.path]));
  return [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--cap-drop", "ALL",
    "--new-session",
    "--die-with-parent",
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
    ...hide(hidden.filter((h) => holdsWorkspace(h.path))),
    "--bind", workspace, workspace,
    ...hide(hidden.filter((h) => !holdsWorkspace(h.path))),
    "--chdir", workspace,
  ];
}

/** What confines bash in this process: the `sandbox` of the `initialize` result. */
export interface SandboxStatus {
  bash: "bubblewrap" | "none";
  reason?: string;
}

const readSysctl = (name: string): string | undefined => {
  try {
    return fs.readFileSync(`/proc/sys/${name}`, "utf8").trim();
  } catch {
    return undefined;
  }
};

/**
 * Why this kernel refuses bubblewrap its user namespace, if it visibly does (no user namespaces
 * at all; Debian's and Ubuntu's switches against unprivileged ones), read from /proc/sys — no
 * process is started, so `initialize` pays nothing for it.
 */
function userNamespacesRefused(): string | undefined {
  if (readSysctl("user/max_user_namespaces") === "0") return "user namespaces are disabled (user.max_user_namespaces = 0)";
  if (process.getuid?.() === 0) return undefined;
  if (readSysctl("kernel/unprivileged_userns_clone") === "0") return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)";
  if (readSysctl("kernel/apparmor_restrict_unprivileged_userns") === "1") return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)";
  return undefined;
}

/**
 * What confines bash under `mode`, as far as can be told without starting a process: bwrap
 * present and the kernel not refusing user namespaces. The first bash call probes the sandbox
 * for real (sandbox-probe.ts) and fails closed with bwrap's own error if it still cannot run
 * (a container's seccomp filter, say), so an optimistic answer here never runs a command
 * unconfined.
 */
export function sandboxStatusAtStart(mode: string, env: NodeJS.ProcessEnv = process.env): SandboxStatus {
  if (mode === "read-only") return { bash: "none", reason: "bash is not offered in read-only mode" };
  if (mode === "full") return { bash: "none", reason: "permission mode full: bash runs unconfined, by design" };
  const bwrap = findBwrap(env);
  if (!bwrap) return { bash: "none", reason: bwrapNotFound(env) };
  const refused = userNamespacesRefused();
  return refused ? { bash: "none", reason: `bubblewrap cannot make its sandbox here: ${refused}` } : { bash: "bubblewrap" };
}

/** Why bwrap was not found: where it was looked for. */
export function bwrapNotFound(env: NodeJS.ProcessEnv = process.env): string {
  return `bubblewrap (bwrap) was not found at ${[env.HARNESS_BWRAP || undefined, ...BWRAP_LOCATIONS].filter(Boolean).join(", ")}`;
}

/** The tool error of bash in `workspace-write` without a working sandbox: it names the fix. */
export function noSandboxMessage(failure: string): string {
  return (
    `bash was not run: permission mode 'workspace-write' runs commands only inside the bubblewrap sandbox, and ${failure}. ` +
    "Fix: install bubblewrap (e.g. `apt-get install bubblewrap`) on a machine that allows user namespaces, " +
    "or initialize with permissionMode \"full\" to run commands unconfined."
  );
}
