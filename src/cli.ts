/**
 * `harness-bridge`: the command line. `--stdio` serves the protocol on stdin/stdout; anything
 * else is a usage error (exit 2) after the help text on stderr.
 *
 * Parsing reads the options as Node's `util.parseArgs` does (cli-args.ts, without loading it),
 * driven by the `OPTIONS` table below, which is also the source of the help text. Invariant:
 * parsing loads nothing, not even Node's own modules, because it is on the start-up path
 * (spawn → `initialize` response); what the reading lacks (choices, integer checks, help) is
 * this table. Why not an argument library: bench/README.md ("Why the code does this").
 */
import * as path from "node:path";
import { parseOptions, type ArgSpec } from "./cli-args.js";
import { defaultSessionRoot } from "./agent/store/root.js";
import { createStderrLogger, LOG_LEVELS, type LogLevel } from "./log.js";
import { PERMISSION_MODES, type PermissionMode } from "./protocol/types.js";
import { PROVIDER_KEY_VARIABLES } from "./providers/types.js";
import { secretRedactor } from "./redact.js";
import { exporterSecrets } from "./sandbox/command-env.js";
import { hideFromSandbox } from "./sandbox/hidden.js";
import { probeSandboxAtStart } from "./sandbox/probe.js";
import { readSecretsFd } from "./secrets-fd.js";
import { SIGNAL_EXIT_CODES } from "./server/lifecycle.js";
import { HarnessServer } from "./server/server.js";
import { openStdio } from "./transport/stdio.js";
import { DEFAULT_MAX_LINE_BYTES, ServerEndpoint } from "./transport/server-endpoint.js";
import { VERSION } from "./version.js";
import { loadViewer } from "./viewer-loader.js";
import { lossyPathProblem, lossyVariable, PATH_VARIABLES } from "./lossy-path.js";

/** A usage error: reported on stderr with exit code 2. */
class UsageError extends Error {}

function positiveInt(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 1) throw new Error("must be a positive integer");
  return n;
}

function inheritedFd(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 3) throw new Error("must be a descriptor number >= 3 (0-2 are stdio)");
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 0) throw new Error("must be a whole number >= 0");
  return n;
}

function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(choices as readonly string[]).includes(value)) throw new Error(`allowed choices are ${choices.join(", ")}`);
    return value as T;
  };
}

interface OptionSpec {
  /** Takes a value (`--name <value>`) or is a flag. */
  type: "string" | "boolean";
  short?: string;
  /** The value's name in the help text. */
  value?: string;
  help: string;
  /** Converts and checks a value; throws with the reason when it is not acceptable. */
  parse?: (value: string) => unknown;
  /** Shown in the help text, and used when the option is absent. */
  default?: unknown;
  /** What the help text says of the default, when the bare value would mislead. */
  shownDefault?: string;
}

/** Every option: what the command line accepts and what `--help` shows, in that order. */
const OPTIONS = {
  version: { type: "boolean", short: "V", help: "output the version number" },
  stdio: { type: "boolean", help: "serve the protocol: requests on stdin, responses and notifications on stdout" },
  "session-root": {
    type: "string",
    value: "<dir>",
    help: "where session logs are kept (default: $HARNESS_SESSION_ROOT, else $XDG_STATE_HOME/harness-bridge or ~/.local/state/harness-bridge)",
  },
  "no-session-log": { type: "boolean", help: "keep sessions in memory only: nothing is written, nothing resumes" },
  "log-level": { type: "string", value: "<level>", help: `stderr log level (${LOG_LEVELS.join("|")})`, parse: oneOf(LOG_LEVELS), default: "warn" },
  "max-steps": { type: "string", value: "<n>", help: "default model requests per turn, when initialize gives none", parse: positiveInt, default: 50 },
  "permission-mode": {
    type: "string",
    value: "<mode>",
    // A ceiling, not a default: the README and PROTOCOL.md's "workspace-write by default" is
    // what a session gets when initialize names no mode (initialize.ts narrowPermission).
    help:
      `the ceiling: the widest permission mode initialize may ask for (${PERMISSION_MODES.join("|")}); ` +
      "a session whose initialize names none runs workspace-write, or the ceiling when that is narrower",
    parse: oneOf(PERMISSION_MODES),
    default: "full",
    shownDefault: "full, i.e. no ceiling",
  },
  "max-line-bytes": { type: "string", value: "<n>", help: "longest accepted request line in bytes", parse: positiveInt, default: DEFAULT_MAX_LINE_BYTES },
  "subagent-depth": { type: "string", value: "<n>", help: "how deep subagents may nest (0 disables the task tool's subagents)", parse: nonNegativeInt, default: 1 },
  "secrets-fd": {
    type: "string",
    value: "<n>",
    help: "read provider keys from this inherited descriptor (a JSON object such as {\"DEEPSEEK_API_KEY\": \"…\"}, up to end of file) instead of the environment, where /proc/<pid>/environ would show them",
    parse: inheritedFd,
  },
  help: { type: "boolean", short: "h", help: "display this help" },
} satisfies Record<string, OptionSpec>;

type OptionName = keyof typeof OPTIONS;

/** What the reading needs of the table: names, types, short flags. */
const ARG_SPECS: Readonly<Record<string, ArgSpec>> = OPTIONS;

const HELP_WIDTH = 80;

/** Breaks `text` into lines of at most `width` characters (at spaces). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

interface CliOptions {
  stdio: boolean;
  sessionRoot?: string;
  sessionLog: boolean;
  logLevel: LogLevel;
  maxSteps: number;
  permissionMode: PermissionMode;
  maxLineBytes: number;
  subagentDepth: number;
  secretsFd?: number;
}

/** The help text, generated from `OPTIONS`. */
export function helpText(): string {
  const rows = Object.entries(OPTIONS).map(([name, spec]: [string, OptionSpec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : ""}--${name}${spec.value ? ` ${spec.value}` : ""}`;
    const shown = spec.shownDefault ?? (spec.default === undefined ? undefined : String(spec.default));
    return [flag, shown === undefined ? spec.help : `${spec.help} (default: ${shown})`];
  });
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  const indent = " ".repeat(2 + width);
  return [
    "Usage: harness-bridge --stdio [options]",
    "       harness-bridge view [options]   (a read-only session viewer: view --help)",
    "",
    // Nothing here points at a file: a user of the bare binary has no checkout to look in.
    ...wrap("A DeepSeek coding-agent runtime serving directional JSON-RPC 2.0 over stdio, one JSON object per line.", HELP_WIDTH),
    "",
    ...wrap(
      'Send initialize {"cwd": ".", "provider": "scripted", "model": "demo"} (offline; "deepseek" needs DEEPSEEK_API_KEY), ' +
        'then session/prompt {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "hi"}]}, then shutdown. ' +
        "Each request is {\"jsonrpc\": \"2.0\", \"id\": …, \"method\": …, \"params\": …}.",
      HELP_WIDTH,
    ),
    "",
    "Options:",
    ...rows.flatMap(([flag, help]) => wrap(help, HELP_WIDTH - indent.length).map((line, i) => (i === 0 ? `  ${flag.padEnd(width)}${line}` : `${indent}${line}`))),
    "",
  ].join("\n");
}

type Parsed = { action: "help" } | { action: "version" } | { action: "serve"; options: CliOptions };

/** Parses the arguments (without the executable and script): what to do, or a `UsageError`. */
export function parseCommandLine(args: string[]): Parsed {
  let values: Partial<Record<string, string | boolean>>;
  try {
    values = parseOptions(args, ARG_SPECS);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { action: "help" };
  if (values.version) return { action: "version" };
  const valueOf = <T>(name: OptionName): T => {
    const spec: OptionSpec = OPTIONS[name];
    const raw = values[name];
    if (typeof raw !== "string") return spec.default as T;
    try {
      return (spec.parse ? spec.parse(raw) : raw) as T;
    } catch (error) {
      throw new UsageError(`option '--${name} ${spec.value ?? ""}' argument '${raw}' is invalid: ${(error as Error).message}`);
    }
  };
  const sessionRoot = values["session-root"] as string | undefined;
  const lossy = sessionRoot === undefined ? undefined : lossyPathProblem(sessionRoot);
  if (lossy) throw new UsageError(`option '--session-root' argument ${JSON.stringify(sessionRoot)} ${lossy}`);
  return {
    action: "serve",
    options: {
      stdio: values.stdio === true,
      sessionRoot,
      sessionLog: values["no-session-log"] !== true,
      logLevel: valueOf("log-level"),
      maxSteps: valueOf("max-steps"),
      permissionMode: valueOf("permission-mode"),
      maxLineBytes: valueOf("max-line-bytes"),
      subagentDepth: valueOf("subagent-depth"),
      secretsFd: valueOf("secrets-fd"),
    },
  };
}

/** Parses the command line and, with `--stdio`, serves until shutdown, EOF or a signal. */
export function main(argv: string[] = process.argv): void {
  // `view`: the session viewer, a chunk of its own (viewer-loader.ts), with its own options.
  if (argv[2] === "view") {
    loadViewer().then(
      (viewer) => viewer.runViewer(argv.slice(3)),
      (error: Error) => {
        process.stderr.write(`error: cannot load the viewer: ${error.message}\n`);
        process.exitCode = 1;
      },
    );
    return;
  }
  let parsed: Parsed;
  try {
    parsed = parseCommandLine(argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n(see harness-bridge --help)\n`);
    process.exitCode = 2;
    return;
  }
  // exitCode, not exit(): what is written to a piped stdout must drain first.
  if (parsed.action === "help") {
    process.stdout.write(helpText());
    process.exitCode = 0;
    return;
  }
  if (parsed.action === "version") {
    process.stdout.write(`${VERSION}\n`);
    process.exitCode = 0;
    return;
  }
  if (!parsed.options.stdio) {
    process.stderr.write(helpText());
    process.stderr.write("\nerror: nothing to do: pass --stdio to serve the protocol\n");
    process.exitCode = 2;
    return;
  }
  // HARNESS_SESSION_ROOT is not read when --session-root is given (lossy-path.ts: why refused).
  const lossy = lossyVariable(process.env, PATH_VARIABLES.filter((name) => name !== "HARNESS_SESSION_ROOT" || parsed.options.sessionRoot === undefined));
  if (lossy) {
    process.stderr.write(`error: ${lossy}\n`);
    process.exitCode = 2;
    return;
  }
  const { secretsFd } = parsed.options;
  const served: { server?: HarnessServer } = {};
  handleSignals(served);
  if (secretsFd === undefined) return serve(parsed.options, {}, served);
  readSecretsFd(secretsFd).then(
    (secrets) => serve(parsed.options, secrets, served),
    (error: Error) => {
      process.stderr.write(`error: ${error.message}\n`);
      process.exitCode = 1;
    },
  );
}

/** How often the parent pid is checked (see `watchParent`). */
export const PARENT_POLL_MS = 200;

/**
 * Calls `gone` once when the process that started the bridge has died. A client killed by
 * SIGKILL closes its pipes, but the bridge would only notice on its next write — never, while a
 * bash command or a model stream that sends only keep-alives is running. When the parent dies
 * the kernel reparents the bridge, so `getppid()` changes: polled on an unref'd timer, which
 * keeps nothing alive. A parent that stays (`cat requests.jsonl | harness-bridge --stdio` in a
 * shell) never triggers it.
 */
function watchParent(gone: () => void): void {
  const parent = process.ppid;
  if (parent <= 1) return; // started by init or a subreaper already: nothing to watch
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    gone();
  }, PARENT_POLL_MS);
  timer.unref();
}

/**
 * Handles SIGTERM, SIGINT and SIGHUP from before anything is read or written: a signal goes to
 * the server once `served.server` is set, and before that (the secrets pipe is still being
 * read: nothing runs, nothing is open) ends the process at once with the signal's exit code, as
 * the server would. Installed before the first await, so the signal's default action (death by
 * the signal, in the middle of whatever the start-up was writing) applies only while Node and
 * the bundle load, when nothing is written. A signal that comes during the synchronous start-up
 * (`serve`) is handled when it yields, by then to the server.
 */
function handleSignals(served: { server?: HarnessServer }): void {
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    // Without a handler SIGHUP kills at once: no aborted responses, no synced log.
    process.on(signal, () => (served.server ? served.server.onSignal(signal) : process.exit(SIGNAL_EXIT_CODES[signal])));
  }
}

/**
 * Runs `attach` on `process.stderr` as Node makes it, at its first use, instead of making it
 * now: Node builds the stream at the first access (a socket for a pipe, a write stream for a
 * file), a share of the start-up (spawn → `initialize` response) that a session logging nothing
 * never needs (bench/README.md, "Cold start without bubblewrap, round 4"). Node's own lazy
 * getter is wrapped, so whoever touches the stream first (the logger, Node's warnings) gets it
 * with `attach` done. Where `stderr` is not a property that can be redefined, at once.
 */
function whenStderrMade(attach: (stderr: NodeJS.WriteStream) => void): void {
  const own = Object.getOwnPropertyDescriptor(process, "stderr");
  if (!own?.configurable || !own.get) return void attach(process.stderr);
  const make = own.get;
  let made = false;
  Object.defineProperty(process, "stderr", {
    ...own,
    get() {
      const stderr = make.call(process) as NodeJS.WriteStream;
      if (!made) {
        made = true;
        attach(stderr);
      }
      return stderr;
    },
  });
}

/** Serves the protocol; `secrets` (from `--secrets-fd`) take precedence over the environment. */
function serve(options: CliOptions, secrets: Record<string, string>, served: { server?: HarnessServer }): void {
  // Logging is best effort: a client that died closes our stderr too, and an EPIPE there must
  // not kill the process before in-flight turns are aborted and their logs synced.
  whenStderrMade((stderr) => stderr.on("error", () => {}));
  // A relative TMPDIR names a folder against this process's working directory, while what it
  // starts runs in the workspace: the Landlock helper, run from the private folder under TMPDIR,
  // would not be found there. Made absolute once, here, for everything that reads it after.
  const tmp = process.env.TMPDIR;
  if (tmp && !path.isAbsolute(tmp)) process.env.TMPDIR = path.resolve(tmp);
  // The providers read their keys from this copy; the process's own environment loses them at
  // once, so nothing the bridge starts (tools, ripgrep, later servers) can inherit one by mistake.
  const env = { ...process.env, ...secrets };
  for (const name of PROVIDER_KEY_VARIABLES) delete process.env[name];
  const redactor = secretRedactor([...PROVIDER_KEY_VARIABLES.map((name) => env[name]), ...exporterSecrets(env)]);
  const logger = createStderrLogger(options.logLevel, undefined, redactor.active ? redactor.text : undefined);
  // Unset: the default root, which the server's store resolves again once it loads (after
  // initialize). An empty HARNESS_SESSION_ROOT counts as unset: as a path it would make every
  // prompt fail (mkdir '').
  const sessionRoot = options.sessionRoot ?? (process.env.HARNESS_SESSION_ROOT || undefined);
  // The session logs are hidden from sandboxed commands (initialize hides them too, for a server
  // made without this command line); hidden before the start probe, so that its rules are the
  // ones `initialize` checks its workspace against (probe.ts `startParts`).
  if (options.sessionLog) hideFromSandbox(sessionRoot ?? defaultSessionRoot(env));
  // Where bubblewrap is visibly not there, `initialize` reports Landlock's probe: started now
  // (the keys are out of the environment it inherits), it runs while the first request is read.
  probeSandboxAtStart(options.permissionMode, env);
  let server: HarnessServer | undefined;
  // stdin and stdout: the first request read and answered before node's streams are made, where
  // both are pipes (stdio.ts); stdout behind the coalescer, one write(2) per burst of frames.
  const stdio = openStdio({
    debug: (message) => logger.debug(message),
    // As a throw of node's stdio getters in `serve` itself would: a start-up error, exit 1.
    failed: (error) => {
      logger.error(`cannot open stdin and stdout: ${error.message}`);
      process.exit(1);
    },
  });
  const endpoint = new ServerEndpoint({
    input: stdio.input,
    output: stdio.output,
    maxLineBytes: options.maxLineBytes,
    logger,
    redactor,
    onInputEnd: () => server?.onInputEnd(),
    onOutputClosed: (error) => server?.onOutputClosed(error),
  });
  server = new HarnessServer({
    endpoint,
    version: VERSION,
    logger,
    env,
    redactor,
    sessionLog: options.sessionLog,
    sessionRoot,
    defaultMaxSteps: options.maxSteps,
    permissionCeiling: options.permissionMode,
    subagentDepth: options.subagentDepth,
    exit: (code) => process.exit(code),
  });
  endpoint.onRequest(server.handle);
  served.server = server;
  // A failure nobody awaited must not kill a bridge that is serving other sessions.
  process.on("unhandledRejection", (reason) => logger.error(`unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`));
  endpoint.start();
  watchParent(() => server?.onClientGone("the parent process exited"));
  logger.debug(`serving on stdio; session logs: ${options.sessionLog ? (sessionRoot ?? "the default root") : "off"}`);
  // Last: the first request may be dispatched right here, with everything above in place.
  stdio.begin();
}
