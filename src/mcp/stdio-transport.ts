/**
 * An MCP stdio transport whose server is a process group that dies with the bridge.
 *
 * Why not the SDK's StdioClientTransport: it spawns the server in the bridge's own process
 * group and only ends the server it started, so a server that starts helpers (`npx` → node,
 * `uvx` → python) leaves them behind, and a bridge killed with SIGKILL leaves all of them.
 * Here the server is started the way bash's commands are (tools/process-group.ts): detached,
 * leading a new process group, under a wrapper whose watcher holds a life-line pipe on fd 3 and
 * kills the whole group when the pipe closes — which the kernel does when the bridge exits in
 * any way. `close()` (shutdown, end of input, signals, a gone client) stops the group at once,
 * and with it the server's descendants that left the group (`setsid`), found in /proc while the
 * server still runs (tools/process-tree.ts); the watcher cannot find those, so a bridge killed
 * outright, or a server that died first, leaves them.
 *
 * Frames are newline-delimited JSON-RPC, as MCP's stdio transport specifies; a line longer
 * than `MAX_LINE_BYTES` (a hostile or broken server) ends the connection instead of growing
 * the bridge's memory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { isOutOfDescriptors } from "../tools/out-of-descriptors.js";
import { KILL_GRACE_MS, killGroup } from "../tools/process-group.js";
import { descendants, endStrays } from "../tools/process-tree.js";
import { findBash } from "../sandbox/locate.js";

/** Longest frame accepted from a server. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;
/**
 * Bytes, and messages, written to a server and not yet taken by it, past which the server is
 * one that does not read its input (each queued message costs the bridge its bytes and a few
 * hundred more of bookkeeping).
 */
export const MAX_UNREAD_BYTES = 16 * 1024 * 1024;
export const MAX_UNREAD_WRITES = 10_000;
/** The end of the server's stderr kept for error messages. */
const STDERR_TAIL_CHARS = 2000;

/**
 * Run as `BASH -c WRAPPER BASH PROGRAM ARGS…`: the fd-3 watcher of process-group.ts, then
 * `exec` of the server (same pid, so the group leader is the server) with fd 3 closed for it.
 * Unlike bash's wrapper, stderr stays apart: stdout carries the server's frames only.
 */
export const SERVER_WRAPPER = ["( trap '' TERM INT HUP; read -r -u 3 _; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &", 'exec "$@" 3<&-'].join("\n");

export interface StdioServerOptions {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Each line the server writes to stderr (the caller logs it). */
  onStderr?: (line: string) => void;
}

export class ProcessGroupTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private child: ChildProcess | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Writes to the server's stdin whose callback has not come (queued in the pipe's buffer). */
  private unreadWrites = 0;
  private stderrTail = "";
  private closed = false;
  /** Why the bridge ended the connection itself (a line too long, input left unread), if it did. */
  closedBecause: string | undefined;
  /** How the process ended, once it did (for the error the next call reads). */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private onExit: (() => void) | undefined;
  /** Resolves when the process has exited and its stderr ended (or it never started). */
  readonly exited = new Promise<void>((resolve) => {
    this.onExit = resolve;
  });

  constructor(private readonly options: StdioServerOptions) {}

  /** The process group id (the server's pid), once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last lines the server wrote to stderr. */
  get stderr(): string {
    return this.stderrTail.trim();
  }

  start(): Promise<void> {
    if (this.child) throw new Error("ProcessGroupTransport already started");
    const bash = findBash();
    const { command, args, cwd, env } = this.options;
    // Checked here: spawn would blame bash (ENOENT) for a missing working folder.
    if (!fs.statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) return Promise.reject(new Error(`its cwd ${cwd} is not a directory`));
    return new Promise((resolve, reject) => {
      const child = spawn(bash, ["-c", SERVER_WRAPPER, bash, command, ...args], { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe", "pipe"] });
      this.child = child;
      child.once("spawn", () => resolve());
      child.once("error", (spawnError) => {
        const error = isOutOfDescriptors(spawnError)
          ? new Error(`the bridge is out of file descriptors (too many open files) for the server's pipes (${spawnError.message}); raise the open-file limit (ulimit -n)`)
          : spawnError;
        this.onExit?.();
        reject(error);
        this.fail(error);
      });
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        // `exited` waits for the end of stderr too (its last words come after the exit), unless
        // a process that left the group holds it open.
        setTimeout(() => this.onExit?.(), 500).unref();
        // Whatever the server left in its group goes with it.
        if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
        // Its last frames are still in the pipe: the end of stdout closes the connection; a
        // stdout held open by a process that left the group does so a little later.
        setTimeout(() => void this.close(), 500).unref();
      });
      // A spawn that failed (EMFILE: no descriptors for the pipes) has no streams; its "error"
      // above comes on the next tick and says why.
      if (!child.stdout) return;
      child.stdout.on("data", (chunk: Buffer) => this.read(chunk));
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (text: string) => this.readStderr(text));
      child.once("close", () => this.onExit?.());
      for (const stream of [child.stdin, child.stdout, child.stderr, child.stdio[3]] as Array<Readable | Writable | null>) stream?.on("error", () => undefined);
      // A server that closes its stdout is done, even if its process lingers.
      child.stdout!.once("close", () => void this.close());
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (this.closed || !stdin || stdin.destroyed) return Promise.reject(new Error("the MCP server's connection is closed"));
    // The SDK answers a server's requests (ping, and "method not found" for the rest) without
    // waiting for the pipe to drain: a server that floods requests and never reads its stdin
    // would grow the bridge's memory until it dies. Past the cap it is a server that does not
    // read, and the connection ends, as for a line too long.
    if (stdin.writableLength > MAX_UNREAD_BYTES || this.unreadWrites >= MAX_UNREAD_WRITES) {
      const error = new Error(`the MCP server does not read its input (${stdin.writableLength} bytes in ${this.unreadWrites} messages unread)`);
      this.refuse(error);
      return Promise.reject(error);
    }
    this.unreadWrites++;
    return new Promise((resolve, reject) => {
      stdin.write(`${JSON.stringify(message)}\n`, (error) => {
        this.unreadWrites--;
        if (error) reject(error);
        else resolve();
      });
    });
  }

  /**
   * Stops the whole group as MCP's stdio transport asks: its stdin closes and it gets SIGTERM
   * now; SIGKILL follows after `KILL_GRACE_MS`, or sooner when the bridge exits (the life-line's
   * watcher). A group whose leader already exited is killed at once.
   */
  async close(): Promise<void> {
    const child = this.child;
    const lifeline = (child?.stdio?.[3] ?? undefined) as Readable | undefined;
    const running = child?.pid !== undefined && this.exit === undefined;
    if (running) {
      const pid = child!.pid!;
      // Found before the server is signalled: once it is gone, what left its group is reparented.
      const strays = descendants(pid);
      killGroup(pid, "SIGTERM");
      endStrays(strays, KILL_GRACE_MS);
      setTimeout(() => {
        killGroup(pid, "SIGKILL");
        lifeline?.destroy();
      }, KILL_GRACE_MS).unref();
    }
    child?.stdin?.destroy();
    child?.stdout?.destroy();
    // stderr is read a little longer: a server that died says why there, after its stdout closed.
    if (child?.stderr) setTimeout(() => child.stderr?.destroy(), 1000).unref();
    // Closing our end of the life-line makes the watcher kill what is left of the group.
    if (!running) lifeline?.destroy();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    this.onclose?.();
  }

  /** The bridge ends a server that broke the transport's rules, and remembers why. */
  private refuse(error: Error): void {
    this.closedBecause ??= error.message;
    this.fail(error);
  }

  private fail(error: Error): void {
    this.onerror?.(error);
    void this.close();
  }

  private read(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const line = this.pending.length ? Buffer.concat([...this.pending, chunk.subarray(start, nl)]) : chunk.subarray(start, nl);
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
      this.parse(line.toString("utf8"));
      if (this.closed) return;
    }
    if (start < chunk.length) {
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > MAX_LINE_BYTES) return this.refuse(new Error(`the MCP server wrote a line longer than ${MAX_LINE_BYTES} bytes`));
      this.pending.push(chunk.subarray(start));
    }
  }

  private parse(line: string): void {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(text));
    } catch (error) {
      // Not a frame (a server printing logs on stdout): reported, not fatal, as the SDK does.
      this.onerror?.(new Error(`the MCP server wrote a line that is not a JSON-RPC message: ${(error as Error).message.slice(0, 200)}`));
      return;
    }
    this.onmessage?.(message);
  }

  private readStderr(text: string): void {
    this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
    if (!this.options.onStderr) return;
    for (const line of text.split("\n")) if (line.trim()) this.options.onStderr(line.slice(0, 1000));
  }
}
