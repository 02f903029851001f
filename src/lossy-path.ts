/**
 * Paths the bridge reads from its command line and environment that it cannot name exactly.
 * Node reads both as UTF-8, each byte of an invalid sequence as U+FFFD: a folder whose name is
 * not valid UTF-8 arrives as the name of another folder (one holding U+FFFD). Used as it came,
 * such a path names a folder nobody named: the session root made there (and shared by every such
 * name), the credential stores under such a HOME or a HARNESS_SANDBOX_HIDE entry left unhidden
 * (the sandbox would hide a folder that does not exist, and show the real one). So each is
 * refused at start, failing closed; a name that holds U+FFFD itself cannot be told from one,
 * and is refused too.
 *
 * @module
 */

/**
 * Variables whose value is a path (or a list of paths) the bridge acts on: what it hides, shows,
 * runs or writes. `PATH` is not one: an entry it cannot name is a folder it finds nothing in.
 */
export const PATH_VARIABLES = ["HOME", "XDG_STATE_HOME", "TMPDIR", "HARNESS_SESSION_ROOT", "HARNESS_SANDBOX_HIDE", "HARNESS_SANDBOX_READ", "HARNESS_BWRAP", "HARNESS_RG"] as const;

/** Why `value` cannot be used as a path, or `undefined`. */
export function lossyPathProblem(value: string): string | undefined {
  if (!value.includes("\uFFFD")) return undefined;
  return "is not valid UTF-8 (or holds U+FFFD, what such a name is read as): the bridge cannot name the path it means; give a path that is valid UTF-8";
}

/** The first of `names` set in `env` to a path the bridge cannot name, as a message, or `undefined`. */
export function lossyVariable(env: NodeJS.ProcessEnv, names: readonly string[] = PATH_VARIABLES): string | undefined {
  for (const name of names) {
    const value = env[name];
    const problem = value ? lossyPathProblem(value) : undefined;
    if (problem) return `${name} ${JSON.stringify(value)} ${problem}`;
  }
  return undefined;
}
