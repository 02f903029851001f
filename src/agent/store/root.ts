/**
 * Where session logs live by default. Its own module: the command line and `initialize` need it
 * before the response (to hide the logs from sandboxed commands) without loading the store.
 */
import { homedir } from "node:os";
import * as path from "node:path";

/** The default session root: `$XDG_STATE_HOME/harness-bridge` or `~/.local/state/harness-bridge`. */
export function defaultSessionRoot(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(homedir(), ".local", "state");
  return path.join(state, "harness-bridge");
}
