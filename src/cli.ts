/**
 * `harness-bridge`: the command line. `--stdio` serves the protocol on stdin/stdout; anything
 * else is a usage error (exit 2) after the help text on stderr.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { createStderrLogger, LOG_LEVELS, type LogLevel } from "./log.js";
import type { PermissionMode } from "./protocol/types.js";
import { HarnessServer } from "./server/server.js";
import { DEFAULT_MAX_LINE_BYTES, ServerEndpoint } from "./transport/server-endpoint.js";
import { VERSION } from "./version.js";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number >= 0");
  return n;
}

interface CliOptions {
  stdio?: boolean;
  sessionRoot?: string;
  sessionLog: boolean;
  logLevel: LogLevel;
  maxSteps: number;
  permissionMode: PermissionMode;
  maxLineBytes: number;
  subagentDepth: number;
}

function buildProgram(): Command {
  return new Command()
    .name("harness-bridge")
    .description("A DeepSeek coding-agent runtime serving directional JSON-RPC 2.0 over stdio (see docs/PROTOCOL.md).")
    .version(VERSION, "-V, --version")
    .option("--stdio", "serve the protocol: requests on stdin, responses and notifications on stdout")
    .option("--session-root <dir>", "where session logs are kept (default: $HARNESS_SESSION_ROOT, else $XDG_STATE_HOME/harness-bridge or ~/.local/state/harness-bridge)")
    .option("--no-session-log", "keep sessions in memory only: nothing is written, nothing resumes")
    .addOption(new Option("--log-level <level>", "stderr log level").choices(LOG_LEVELS).default("warn"))
    .option("--max-steps <n>", "default model requests per turn, when initialize gives none", positiveInt, 50)
    .addOption(
      new Option("--permission-mode <mode>", "the widest permission mode initialize may ask for").choices(["read-only", "workspace-write", "full"]).default("full"),
    )
    .option("--max-line-bytes <n>", "longest accepted request line in bytes", positiveInt, DEFAULT_MAX_LINE_BYTES)
    .option("--subagent-depth <n>", "how deep subagents may nest (0 disables the task tool's subagents)", nonNegativeInt, 1)
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })
    .exitOverride();
}

/** Parses the command line and, with `--stdio`, serves until shutdown, EOF or a signal. */
export function main(argv: string[] = process.argv): void {
  const program = buildProgram();
  try {
    program.parse(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version are successes; every other complaint is a usage error.
      const ok = error.code === "commander.helpDisplayed" || error.code === "commander.version";
      // exitCode, not exit(): what commander wrote to a piped stdout must drain first.
      process.exitCode = ok ? 0 : 2;
      return;
    }
    throw error;
  }
  const options = program.opts<CliOptions>();
  if (!options.stdio) {
    process.stderr.write(program.helpInformation());
    process.stderr.write("\nerror: nothing to do: pass --stdio to serve the protocol\n");
    process.exitCode = 2;
    return;
  }
  serve(options);
}

function serve(options: CliOptions): void {
  // Logging is best effort: a client that died closes our stderr too, and an EPIPE there must
  // not kill the process before in-flight turns are aborted and their logs synced.
  process.stderr.on("error", () => {});
  const logger = createStderrLogger(options.logLevel);
  // The default root is resolved by the server with the store, which loads after initialize.
  const sessionRoot = options.sessionRoot ?? process.env.HARNESS_SESSION_ROOT;
  let server: HarnessServer | undefined;
  const endpoint = new ServerEndpoint({
    input: process.stdin,
    output: process.stdout,
    maxLineBytes: options.maxLineBytes,
    logger,
    onInputEnd: () => server?.onInputEnd(),
    onOutputClosed: (error) => server?.onOutputClosed(error),
  });
  server = new HarnessServer({
    endpoint,
    version: VERSION,
    logger,
    env: process.env,
    sessionLog: options.sessionLog,
    sessionRoot,
    defaultMaxSteps: options.maxSteps,
    permissionCeiling: options.permissionMode,
    subagentDepth: options.subagentDepth,
    exit: (code) => process.exit(code),
  });
  endpoint.onRequest(server.handle);
  process.on("SIGTERM", () => server?.onSignal("SIGTERM"));
  process.on("SIGINT", () => server?.onSignal("SIGINT"));
  // A failure nobody awaited must not kill a bridge that is serving other sessions.
  process.on("unhandledRejection", (reason) => logger.error(`unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`));
  endpoint.start();
  logger.debug(`serving on stdio; session logs: ${options.sessionLog ? (sessionRoot ?? "the default root") : "off"}`);
}
