/**
 * `harness-bridge view`: serves the session viewer on 127.0.0.1 until SIGINT or SIGTERM.
 *
 * The entry of the viewer chunk (scripts/build.mjs builds it apart from the main bundle, and
 * src/viewer-loader.ts evaluates it only for `view`): nothing here is loaded by `--stdio`.
 *
 * Invariants, and why:
 * - It listens on 127.0.0.1 and nowhere else. There is no option for the address: the logs
 *   hold tool output (which may hold secrets) and the page has no authentication, so it must
 *   not be reachable from another machine. http.ts refuses any non-loopback `Host` as well.
 * - It reads logs and never writes them (log-reader.ts): it can run beside a bridge that is
 *   writing the same session.
 * - Output: the URL alone on stdout (one line, for a script or the Python SDK to read), the
 *   human note on stderr.
 *
 * @module
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { workspaceFolderName } from "../agent/store/log-format.js";
import { defaultSessionRoot } from "../agent/store/root.js";
import { viewerHandler } from "./http.js";
import { lossyPathProblem, lossyVariable } from "../lossy-path.js";

/** The one address the viewer listens on. */
export const VIEWER_HOST = "127.0.0.1";

export const VIEW_HELP = [
  "Usage: harness-bridge view [options]",
  "",
  "Serves a read-only page on 127.0.0.1 that lists the workspace's sessions and shows one as a",
  "timeline, following its log while a turn runs. Prints the URL on stdout; stops on Ctrl-C.",
  "",
  "Options:",
  "  --session-root <dir>  where session logs are kept (default: $HARNESS_SESSION_ROOT, else",
  "                        $XDG_STATE_HOME/harness-bridge or ~/.local/state/harness-bridge)",
  "  --workspace <dir>     the workspace whose sessions are shown (default: the current folder)",
  "  --port <n>            the port on 127.0.0.1 (default: 0, any free port)",
  "  -h, --help            display this help",
  "",
].join("\n");

export interface ViewerOptions {
  sessionRoot: string;
  workspace: string;
  port: number;
}

/** Parses `view`'s arguments (after `view`); throws an Error with the reason on a usage error, returns undefined for --help. */
export function parseViewArgs(args: string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ViewerOptions | undefined {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: { "session-root": { type: "string" }, workspace: { type: "string" }, port: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) return undefined;
  const rawPort = values.port ?? "0";
  const port = Number(rawPort);
  if (!/^\d{1,5}$/.test(rawPort) || port > 65535) throw new Error(`option '--port <n>' argument '${rawPort}' is invalid: must be a port number from 0 to 65535`);
  // A path Node read with U+FFFD names another folder than the one meant (lossy-path.ts).
  const root = values["session-root"];
  for (const [option, value] of [["--session-root", root], ["--workspace", values.workspace]] as const) {
    const problem = value === undefined ? undefined : lossyPathProblem(value);
    if (problem) throw new Error(`option '${option}' argument ${JSON.stringify(value)} ${problem}`);
  }
  const lossy = root === undefined ? lossyVariable(env, ["HARNESS_SESSION_ROOT", "XDG_STATE_HOME", "HOME"]) : undefined;
  if (lossy) throw new Error(lossy);
  return {
    sessionRoot: path.resolve(cwd, root ?? (env.HARNESS_SESSION_ROOT || defaultSessionRoot(env))),
    workspace: path.resolve(cwd, values.workspace ?? "."),
    port,
  };
}

/** Starts the viewer on 127.0.0.1; resolves to the listening server once it listens. */
export function startViewer(options: ViewerOptions): Promise<http.Server> {
  const directory = path.join(options.sessionRoot, workspaceFolderName(options.workspace));
  const server = http.createServer();
  const port = (): number => (server.address() as AddressInfo).port;
  server.on("request", viewerHandler({ directory, workspace: options.workspace, sessionRoot: options.sessionRoot, port }));
  // A request a client abandons must not become an unhandled error.
  server.on("clientError", (_error, socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, VIEWER_HOST, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

/** `harness-bridge view …`: serves until SIGINT or SIGTERM, then exits 0. Usage errors exit 2. */
export function runViewer(args: string[]): void {
  let options: ViewerOptions | undefined;
  try {
    options = parseViewArgs(args);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n(see harness-bridge view --help)\n`);
    process.exitCode = 2;
    return;
  }
  if (!options) {
    process.stdout.write(VIEW_HELP);
    return;
  }
  const chosen = options;
  // A reader that went away (`view | head -1`) must not crash the server with EPIPE.
  process.stdout.on("error", () => {});
  process.stderr.on("error", () => {});
  // The handlers come first: a signal that arrives before them takes its default action (the
  // process killed, not exiting 0), and a client may send one the moment it reads the URL.
  let serving: http.Server | undefined;
  const stop = (): void => {
    if (!serving) process.exit(0);
    serving.close(() => process.exit(0));
    // Open polls (keep-alive sockets) must not hold the exit.
    serving.closeAllConnections();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  startViewer(chosen).then(
    (server) => {
      serving = server;
      const url = `http://${VIEWER_HOST}:${(server.address() as AddressInfo).port}/`;
      process.stdout.write(`${url}\n`);
      process.stderr.write(`harness-bridge view: sessions of ${chosen.workspace} (logs in ${chosen.sessionRoot}), read-only, at ${url} — Ctrl-C stops\n`);
    },
    (error: Error) => {
      process.stderr.write(`error: cannot listen on ${VIEWER_HOST}:${chosen.port}: ${error.message}\n`);
      process.exitCode = 1;
    },
  );
}
