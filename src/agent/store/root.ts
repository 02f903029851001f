/**
 * Where session logs live by default. Its own module: the command line and `initialize` need it
 * before the response (to hide the logs from sandboxed commands) without loading the store.
 */
import * as path from "node:path";
import { homeFolder } from "../../home-folder.js";

/** The default session root: `$XDG_STATE_HOME/harness-bridge` or `~/.local/state/harness-bridge`. */
export function defaultSessionRoot(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(homeFolder(env), ".local", "state");
  return path.join(state, "harness-bridge");
}
