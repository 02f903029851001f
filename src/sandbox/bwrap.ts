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
import * as path from "node:path";
import { isInside } from "../tools/path-inside.js";
import { hiddenPaths } from "./hidden.js";
import { isExecutableFile } from "./locate.js";

/** Where bwrap is looked for (`HARNESS_BWRAP`, an absolute path, comes first). */
export const BWRAP_LOCATIONS: readonly string[] = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];
/** The bwrap to use, or null: `HARNESS_BWRAP` when it is an absolute path (`off` or another value: none), else the first of `BWRAP_LOCATIONS`. */
export function findBwrap(env: NodeJS.ProcessEnv = process.env): string | null {
  const chosen = env.HARNESS_BWRAP;
  if (chosen !== undefined && chosen !== "") return path.isAbsolute(chosen) && isExecutableFile(chosen) ? chosen : null;
  return BWRAP_LOCATIONS.find(isExecutableFile) ?? null;
}

/** Why bwrap was not found: where it was looked for. */
export function bwrapNotFound(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HARNESS_BWRAP === "off") return "bubblewrap is switched off (HARNESS_BWRAP=off)";
  return `bubblewrap (bwrap) was not found at ${[env.HARNESS_BWRAP || undefined, ...BWRAP_LOCATIONS].filter(Boolean).join(", ")}`;
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

