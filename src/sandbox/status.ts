/**
 * What confines bash, as the `initialize` result reports it, and the error of a bash that
 * refuses to run unconfined.
 */
import { readFileSync } from "node:fs";
import { bwrapNotFound, findBwrap } from "./bwrap.js";

/** What confines bash in this process: the `sandbox` of the `initialize` result. */
export interface SandboxStatus {
  bash: "bubblewrap" | "landlock" | "none";
  reason?: string;
  /** With `landlock`: the kernel's Landlock ABI (what it enforces: docs/tools.md). */
  landlockAbi?: number;
}

const readSysctl = (name: string): string | undefined => {
  try {
    return readFileSync(`/proc/sys/${name}`, "utf8").trim();
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
 * for real (probe.ts) and, if it still cannot run (a container's seccomp filter, say), uses
 * the Landlock confinement or fails closed, so an optimistic answer here never runs a command
 * unconfined. `none` here means "not bubblewrap": probe.ts `initialSandboxStatus` then asks Landlock.
 */
export function sandboxStatusAtStart(mode: string, env: NodeJS.ProcessEnv = process.env): SandboxStatus {
  if (mode === "read-only") return { bash: "none", reason: "bash is not offered in read-only mode" };
  if (mode === "full") return { bash: "none", reason: "permission mode full: bash runs unconfined, by design" };
  const bwrap = findBwrap(env);
  if (!bwrap) return { bash: "none", reason: bwrapNotFound(env) };
  const refused = userNamespacesRefused();
  return refused ? { bash: "none", reason: `bubblewrap cannot make its sandbox here: ${refused}` } : { bash: "bubblewrap" };
}

/**
 * Whether a sandbox's failure is for want of file descriptors (EMFILE, ENFILE), which says
 * nothing of the machine: a spawn's, in Node's code, or a started program's own (the helper's
 * and bubblewrap's, in strerror's words). Read from the text, so a path holding those words
 * matches too: that costs only a probe again at the next call, never a command run unconfined.
 */
export function failedForWantOfDescriptors(failure: string): boolean {
  return /\bE[MN]FILE\b|Too many open files/.test(failure);
}

/**
 * How a Landlock failure that is the temporary folder's says so (landlock-helper.ts): the helper
 * is written there before it runs, so a TMPDIR that is missing, read-only or full stops the
 * confinement on a kernel that has Landlock, and the fix is TMPDIR, not another kernel.
 */
export const TEMP_FOLDER_FAILURE = "cannot hold the Landlock helper";

/**
 * How a Landlock refusal that is the bridge's own session log folder says so (landlock.ts): a
 * session root inside the workspace cannot be hidden from a command allowed the workspace, and
 * the fix is to move the session root (or keep no log), not another kernel.
 */
export const BRIDGE_FOLDER_FAILURE = "the bridge's session log folder";

/**
 * The tool error of bash in `workspace-write` without a working sandbox: it names the fixes.
 * A sandbox that could not be tried for want of file descriptors says nothing of this machine's
 * bubblewrap or kernel, so installing either is not the fix then: the open-file limit is. Such an
 * answer is not kept (probe.ts): the next bash call probes again.
 */
export function noSandboxMessage(failure: string): string {
  const refusal = `bash was not run: permission mode 'workspace-write' runs commands only inside a sandbox (bubblewrap, or Landlock), and ${failure}. `;
  const full = "or initialize with permissionMode \"full\" to run commands unconfined.";
  if (failedForWantOfDescriptors(failure)) {
    return (
      refusal +
      "The bridge had no file descriptor left to start the sandbox with (too many open files). " +
      `Fix: close what holds descriptors, or raise the open-file limit (ulimit -n; 64 or more), and call bash again, ${full}`
    );
  }
  // The failure's own fix first; bubblewrap, where it can run, confines whatever the cause.
  const bubblewrap = "install bubblewrap (e.g. `apt-get install bubblewrap`) on a machine that allows user namespaces";
  const fixes = failure.includes(TEMP_FOLDER_FAILURE)
    ? `set TMPDIR to a folder this user can write, on a mount that allows running programs (not noexec), with room for the helper, and start the bridge again, or ${bubblewrap}`
    : failure.includes(BRIDGE_FOLDER_FAILURE)
      ? "start the bridge with a session root outside the workspace (--session-root DIR or HARNESS_SESSION_ROOT; the Python SDK's session_root=), " +
        `or with --no-session-log to keep sessions in memory only, or ${bubblewrap}`
      : `${bubblewrap}, or run on a Linux kernel with Landlock enabled (5.13 or later)`;
  return `${refusal}Fix: ${fixes}, ${full}`;
}
