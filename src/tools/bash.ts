/**
 * `bash {command, timeoutMs?}`: runs `bash -c command` in the workspace, in its own process
 * group, with a timeout, bounded output, a scrubbed environment and — in `workspace-write` mode —
 * only inside the bubblewrap sandbox (sandbox.ts), refusing to run without it. See docs/tools.md.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PROVIDER_KEY_VARIABLES } from "../providers/types.js";
import { bwrapArgs, findBash, findBwrap, noSandboxMessage } from "./sandbox.js";
import { probeSandbox } from "./sandbox-probe.js";
import { GROUP_WRAPPER, KILL_GRACE_MS, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, runInProcessGroup } from "./process-group.js";
import { ToolError, textOutput, type Tool, type ToolContext } from "./types.js";

/** Timeout when none is given. */
export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
/** Larger timeouts are clamped to this. */
export const BASH_MAX_TIMEOUT_MS = 600_000;
/** Longest command accepted. */
export const BASH_MAX_COMMAND_CHARS = 100_000;
export { KILL_GRACE_MS as BASH_KILL_GRACE_MS, OUTPUT_HEAD_BYTES as BASH_OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES as BASH_OUTPUT_TAIL_BYTES };

/** Environment variables never passed to commands, besides any matching `SECRET_ENV_PATTERN`. */
export const SECRET_ENV_NAMES: readonly string[] = PROVIDER_KEY_VARIABLES;
/** Names matching this are treated as secrets and removed from the commands' environment. */
export const SECRET_ENV_PATTERN =
  /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|(^|_)PASS(_|$)|PGPASS|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION|PRIVATE|^AWS_|^AZURE_CLIENT|^GOOGLE_APPLICATION/i;
/** A value holding a URL with credentials (`scheme://user:password@host`, e.g. a proxy or database URL) is a secret too. */
export const CREDENTIAL_URL_PATTERN = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]*@/i;
/** Set for every command: no colours, no pagers, a dumb terminal. */
export const BASH_ENV_OVERRIDES: Readonly<Record<string, string>> = { NO_COLOR: "1", PAGER: "cat", GIT_PAGER: "cat", TERM: "dumb" };

/**
 * The environment of a command: `base` without secrets (names matching `SECRET_ENV_PATTERN`,
 * values holding a URL with credentials), PATH without relative or empty entries (those
 * resolve against the working directory, which is the workspace: a `git` or `ls` planted there
 * would run in place of the real one), plus `BASH_ENV_OVERRIDES`.
 */
export function commandEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || SECRET_ENV_NAMES.includes(name) || SECRET_ENV_PATTERN.test(name) || CREDENTIAL_URL_PATTERN.test(value)) continue;
    env[name] = value;
  }
  if (env.PATH !== undefined) env.PATH = env.PATH.split(path.delimiter).filter((dir) => path.isAbsolute(dir)).join(path.delimiter);
  return { ...env, ...BASH_ENV_OVERRIDES };
}

function parseTimeout(value: unknown): number {
  if (value === undefined || value === null) return BASH_DEFAULT_TIMEOUT_MS;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new ToolError(`timeoutMs must be a positive number of milliseconds (got ${JSON.stringify(value)})`);
  }
  return Math.min(Math.ceil(value), BASH_MAX_TIMEOUT_MS);
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** The argv to run `command`: the group wrapper by bash's absolute path, inside bwrap in `workspace-write`; or why it cannot run. */
async function commandArgv(command: string, ctx: ToolContext, workspace: string): Promise<{ argv: string[] } | { refused: string }> {
  const bash = findBash();
  const inner = [bash, "-c", GROUP_WRAPPER, bash, command];
  if (ctx.permissionMode !== "workspace-write") return { argv: inner };
  const failure = await probeSandbox(workspace);
  if (failure !== null) return { refused: noSandboxMessage(failure) };
  return { argv: [findBwrap()!, ...bwrapArgs(workspace), ...inner] };
}

export const bashTool: Tool = {
  name: "bash",
  readOnly: false,
  description:
    "Run a shell command with `bash -c` in the workspace folder and return its output (stdout and stderr merged, " +
    "in order) and exit code. Use it for builds, tests, git and other programs. Non-interactive: stdin is empty, " +
    `no colours, no pager. Timeout ${seconds(BASH_DEFAULT_TIMEOUT_MS)} by default (timeoutMs, at most ${seconds(BASH_MAX_TIMEOUT_MS)}); ` +
    `on timeout every process the command started is killed. Output over ${(OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) / 1024} KiB keeps ` +
    "its start and end and says how much was cut — redirect to a file and use grep/read_file for big outputs. " +
    "Background processes (`&`) are killed when the command finishes. Each call is a fresh shell: cd and variables do not persist.",
  parameters: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command line, run with `bash -c`" },
      timeoutMs: {
        type: "integer",
        minimum: 1,
        maximum: BASH_MAX_TIMEOUT_MS,
        description: `Timeout in milliseconds (default ${BASH_DEFAULT_TIMEOUT_MS}, at most ${BASH_MAX_TIMEOUT_MS})`,
      },
    },
    required: ["command"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (ctx.permissionMode === "read-only") throw new ToolError("bash is not available in read-only mode");
    const command = args.command;
    if (typeof command !== "string" || command.trim() === "") throw new ToolError("command is required and must be a non-empty string");
    if (command.length > BASH_MAX_COMMAND_CHARS) throw new ToolError(`command is longer than ${BASH_MAX_COMMAND_CHARS} characters`);
    const timeoutMs = parseTimeout(args.timeoutMs);
    let workspace: string;
    try {
      workspace = fs.realpathSync(ctx.workspace);
    } catch (err) {
      throw new ToolError(`the workspace ${ctx.workspace} is not accessible: ${(err as Error).message}`);
    }
    const how = await commandArgv(command, ctx, workspace);
    if ("refused" in how) return textOutput(how.refused, true);
    const { argv } = how;
    const run = await runInProcessGroup({ argv, cwd: workspace, env: commandEnv(), timeoutMs, signal: ctx.signal });

    if (run.spawnError) {
      return textOutput(`could not start ${argv[0]}: ${run.spawnError.message}`, true);
    }
    const body = run.output.total === 0 ? "(no output)" : run.output.text().replace(/\n$/, "");
    let status: string;
    let isError = false;
    if (run.stopped === "timeout") {
      status = `[timed out after ${seconds(timeoutMs)}: the command and every process it started were killed]`;
      isError = true;
    } else if (run.stopped === "abort") {
      status = "[aborted: the command and every process it started were killed]";
      isError = true;
    } else if (run.exitSignal) {
      status = `[killed by signal ${run.exitSignal}]`;
    } else {
      status = `[exit code ${run.code}]`;
    }
    return textOutput(`${body}\n${status}`, isError);
  },
};
