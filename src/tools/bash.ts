/**
 * `bash {command, timeoutMs?}`: runs `bash -c command` in the workspace, in its own process
 * group, with a timeout, bounded output, a scrubbed environment and — in `workspace-write` mode —
 * only inside the sandbox (src/sandbox/), refusing to run without it. See docs/tools.md.
 */
import * as fs from "node:fs";
import { bwrapArgs } from "../sandbox/bwrap.js";
import { commandEnv } from "../sandbox/command-env.js";
import { findBash } from "../sandbox/locate.js";
import { landlockCommand, makeCommandTmp } from "../sandbox/landlock.js";
import { chooseSandbox } from "../sandbox/probe.js";
import { noSandboxMessage } from "../sandbox/status.js";
import { isOutOfDescriptors } from "./out-of-descriptors.js";
import { GROUP_WRAPPER, KILL_GRACE_MS, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, runInProcessGroup } from "./process-group.js";
import { ToolError, textOutput, type Tool, type ToolContext } from "./types.js";

/** Timeout when none is given. */
export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
/** Larger timeouts are clamped to this. */
export const BASH_MAX_TIMEOUT_MS = 600_000;
/** Longest command accepted. */
export const BASH_MAX_COMMAND_CHARS = 100_000;
export { KILL_GRACE_MS as BASH_KILL_GRACE_MS, OUTPUT_HEAD_BYTES as BASH_OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES as BASH_OUTPUT_TAIL_BYTES };

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

/**
 * How to run `command`: the group wrapper by bash's absolute path — inside bubblewrap, or the
 * Landlock confinement, in `workspace-write` (probe.ts chooses) — with its environment and
 * what to remove afterwards; or why it cannot run. Under Landlock the command gets a private
 * temporary folder of its own (TMPDIR), removed when it ends; bubblewrap gives it a private /tmp.
 */
async function commandArgv(command: string, ctx: ToolContext, workspace: string): Promise<{ argv: string[]; env: NodeJS.ProcessEnv; tmp?: string; unconfined?: true } | { refused: string }> {
  const bash = findBash();
  const inner = [bash, "-c", GROUP_WRAPPER, bash, command];
  if (ctx.permissionMode !== "workspace-write") return { argv: inner, env: commandEnv(), unconfined: true };
  const chosen = await chooseSandbox(workspace);
  if (chosen.kind === "none") return { refused: noSandboxMessage(chosen.reason) };
  if (chosen.kind === "bubblewrap") return { argv: [chosen.bwrap, ...bwrapArgs(workspace), ...inner], env: { ...commandEnv(), TMPDIR: "/tmp" } };
  let tmp: string | undefined;
  try {
    tmp = makeCommandTmp();
    return { argv: [...landlockCommand(workspace, tmp), ...inner], env: { ...commandEnv(), TMPDIR: tmp }, tmp };
  } catch (error) {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    return { refused: noSandboxMessage(`the Landlock confinement cannot run: ${(error as Error).message}`) };
  }
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
    let run;
    try {
      // Unconfined, nothing holds what leaves the command's group but the bridge; the sandboxes
      // do (bubblewrap's PID namespace; Landlock's seccomp filter makes setsid a no-op).
      run = await runInProcessGroup({ argv, cwd: workspace, env: how.env, timeoutMs, signal: ctx.signal, endStrays: how.unconfined });
    } finally {
      if (how.tmp) fs.rmSync(how.tmp, { recursive: true, force: true });
    }

    if (run.spawnError) {
      const why = isOutOfDescriptors(run.spawnError)
        ? "the bridge is out of file descriptors (too many open files) for its pipes; try again, or raise the open-file limit (ulimit -n)"
        : run.spawnError.message;
      return textOutput(`could not start ${argv[0]}: ${why}`, true);
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
