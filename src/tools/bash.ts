/**
 * `bash {command, timeoutMs?}`: runs `bash -c command` in the workspace, in its own process
 * group, with a timeout, bounded output, a scrubbed environment and — in `workspace-write` mode,
 * where bubblewrap is installed — a sandbox in which only the workspace (and a private /tmp) is
 * writable. See docs/tools.md.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
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
export const SECRET_ENV_NAMES: readonly string[] = ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"];
/** Names matching this are treated as secrets and removed from the commands' environment. */
export const SECRET_ENV_PATTERN = /KEY|SECRET|TOKEN|PASSWORD|PASSWD/i;
/** Set for every command: no colours, no pagers, a dumb terminal. */
export const BASH_ENV_OVERRIDES: Readonly<Record<string, string>> = { NO_COLOR: "1", PAGER: "cat", GIT_PAGER: "cat", TERM: "dumb" };

/** The environment of a command: `base` without secrets, plus `BASH_ENV_OVERRIDES`. */
export function commandEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || SECRET_ENV_NAMES.includes(name) || SECRET_ENV_PATTERN.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...BASH_ENV_OVERRIDES };
}

let bwrapPath: string | null | undefined;

/** The path of `bwrap` on PATH, or null (looked up once). */
export function findBwrap(): string | null {
  if (bwrapPath !== undefined) return bwrapPath;
  bwrapPath = null;
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, "bwrap");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) {
        bwrapPath = candidate;
        break;
      }
    } catch {
      // not here
    }
  }
  return bwrapPath;
}

/**
 * bubblewrap arguments: the whole file system read-only, fresh /dev, /proc and /tmp, the
 * workspace writable, a PID namespace (so everything started dies with it) and death with the
 * parent. The network is not restricted.
 */
export function bwrapArgs(workspace: string): string[] {
  return [
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
    "--bind", workspace, workspace,
    "--unshare-pid",
    "--die-with-parent",
    "--chdir", workspace,
  ];
}

const probes = new Map<string, Promise<string | null>>();

/** Whether bwrap works here for this workspace: null when it does, else its error (probed once per workspace). */
function probeBwrap(bwrap: string, workspace: string): Promise<string | null> {
  let probe = probes.get(workspace);
  if (!probe) {
    probe = new Promise((resolve) => {
      execFile(bwrap, [...bwrapArgs(workspace), "true"], { timeout: 10_000 }, (err, _stdout, stderr) => {
        resolve(err ? (String(stderr).trim() || err.message).split("\n")[0] : null);
      });
    });
    probes.set(workspace, probe);
  }
  return probe;
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

/** The argv to run `command`: the group wrapper, inside bwrap when it applies. */
async function commandArgv(command: string, ctx: ToolContext, workspace: string): Promise<{ argv: string[]; note?: string }> {
  const inner = ["bash", "-c", GROUP_WRAPPER, "harness-bash", command];
  if (ctx.permissionMode !== "workspace-write") return { argv: inner };
  const bwrap = findBwrap();
  if (!bwrap) return { argv: inner };
  const failure = await probeBwrap(bwrap, workspace);
  if (failure !== null) {
    return { argv: inner, note: `[note: bwrap is installed but failed here (${failure}); the command ran without the sandbox]` };
  }
  return { argv: [bwrap, ...bwrapArgs(workspace), ...inner] };
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
    const { argv, note } = await commandArgv(command, ctx, workspace);
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
    return textOutput([note, body, status].filter((s) => s !== undefined).join("\n"), isError);
  },
};
