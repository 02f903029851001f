/**
 * A raw NDJSON client of the built binary: spawns `bin/harness-bridge`, writes lines or bytes
 * to its stdin, parses every stdout line into a frame, keeps stderr, and waits for responses,
 * frames and the exit. It knows nothing of the protocol beyond "one JSON object per line".
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams, type SpawnOptions } from "node:child_process";
import * as fs from "node:fs";
import { Socket } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
/**
 * The executable under test: bin/harness-bridge, or HARNESS_TEST_BINARY (scripts/test-arm64.sh
 * points it at scripts/arm64-under-qemu to run the same tests through the arm64 build).
 */
export const BINARY = process.env.HARNESS_TEST_BINARY || path.join(ROOT, "bin", "harness-bridge");

/** Any parsed stdout frame. */
export interface Frame {
  jsonrpc: string;
  id?: string | number | null;
  method?: string;
  params?: any;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

export interface RawClientOptions {
  /** CLI arguments. Default: `["--stdio", "--no-session-log"]`. */
  args?: string[];
  /** The child's environment. Default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The executable. Default: bin/harness-bridge. */
  command?: string;
  /** A pipe on the child's descriptor 3 (for `--secrets-fd 3`): what is written, and whether the end is closed after it (default true). */
  fd3?: {
    write: string;
    close?: boolean;
    /**
     * A pipe (a FIFO here), as the SDK's `os.pipe()` makes, instead of Node's socket pair; what
     * fits in it (64 KiB) is written before the spawn, as the SDK does, the rest after it, and
     * `later` after `laterMs` (then the end is closed, unless `close` is false).
     */
    fifo?: boolean;
    later?: string;
    laterMs?: number;
  };
  /**
   * stdin and stdout as pipes, what a Python client's `subprocess.PIPE` gives (FIFOs in a
   * temporary folder here: Node makes no anonymous pipe). By default they are what Node's
   * `spawn` makes, socket pairs. The bridge reads and answers its first request before making its
   * streams only on pipes (src/transport/stdio.ts).
   */
  pipes?: boolean;
}

/**
 * A FIFO made at `file`, both its ends opened without blocking: the reader first (non-blocking:
 * no writer yet), so that the writer's open finds one.
 */
export function openFifo(file: string): { read: number; write: number } {
  execFileSync("mkfifo", ["-m", "600", file]);
  const read = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  return { read, write: fs.openSync(file, fs.constants.O_WRONLY) };
}

/** A FIFO for `--secrets-fd`: `text` written into it as far as it fits before the spawn (the rest is the caller's to write). */
function secretsFifo(text: string): { childEnd: number; writer: Writable; rest: Buffer; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-fifo-"));
  const { read: childEnd, write: parentEnd } = openFifo(path.join(dir, "secrets"));
  const bytes = Buffer.from(text);
  // An empty pipe takes 64 KiB at once: written now, the write cannot block.
  const now = Math.min(bytes.length, 64 * 1024);
  if (now > 0) fs.writeSync(parentEnd, bytes, 0, now);
  const writer = new Socket({ fd: parentEnd, readable: false, writable: true });
  const cleanup = () => {
    fs.closeSync(childEnd);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { childEnd, writer, rest: bytes.subarray(now), cleanup };
}

/** The ends of two FIFOs for a child's stdin and stdout, and the parent's streams on the other ends. */
function fifoStdio(): { childIn: number; childOut: number; stdin: Writable; stdout: Readable; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-fifo-"));
  const { read: childIn, write: parentIn } = openFifo(path.join(dir, "stdin"));
  const { read: parentOut, write: childOut } = openFifo(path.join(dir, "stdout"));
  const stdin = new Socket({ fd: parentIn, readable: false, writable: true });
  const stdout = new Socket({ fd: parentOut, readable: true, writable: false });
  const cleanup = () => {
    for (const fd of [childIn, childOut]) fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { childIn, childOut, stdin, stdout, cleanup };
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const DEFAULT_WAIT_MS = 15_000;

export class RawClient {
  readonly child: ChildProcessWithoutNullStreams;
  /** The child's stdin and stdout as this side writes and reads them (the child's own streams, or the FIFOs' other ends). */
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** Every stdout frame, in order. */
  readonly frames: Frame[] = [];
  /** stdout lines that did not parse as JSON (there must be none). */
  readonly badLines: string[] = [];
  /** Every raw stdout line, in order. */
  readonly lines: string[] = [];
  /** stderr so far. While the bridge runs, wait for a line with `stderrMatching` (stderr is a
   * second pipe: it can arrive after a later stdout frame); after `exited` it is complete. */
  stderr = "";
  /** Resolves once the process has exited and its stdout and stderr have been read to the end
   * (or 5 s after the exit, should something else still hold a pipe; a stdout the test paused
   * is not waited for).
   * The `exit` event alone can come before the last frames or log lines are read. */
  readonly exited: Promise<Exit>;
  private stdoutBuffer = "";
  private waiters: Array<() => void> = [];
  private exitInfo: Exit | undefined;

  constructor(options: RawClientOptions = {}) {
    const fifos = options.pipes ? fifoStdio() : undefined;
    const secrets = options.fd3?.fifo ? secretsFifo(options.fd3.write) : undefined;
    const stdio: SpawnOptions["stdio"] = [fifos?.childIn ?? "pipe", fifos?.childOut ?? "pipe", "pipe", ...(options.fd3 ? [secrets?.childEnd ?? ("pipe" as const)] : [])];
    const spawnOptions: SpawnOptions = { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio };
    this.child = spawn(options.command ?? BINARY, options.args ?? ["--stdio", "--no-session-log"], spawnOptions) as ChildProcessWithoutNullStreams;
    // The child holds its ends now: this side keeps only its own (so the child sees the end of its input when this side ends it).
    fifos?.cleanup();
    this.stdin = fifos?.stdin ?? this.child.stdin;
    this.stdout = fifos?.stdout ?? this.child.stdout;
    if (options.fd3) {
      secrets?.cleanup();
      const writer = secrets?.writer ?? (this.child.stdio[3] as Writable);
      const { write, later, laterMs = 300, close } = options.fd3;
      writer.on("error", () => undefined);
      // Into a FIFO, what fits was written before the spawn (`secretsFifo`).
      const now = secrets ? secrets.rest : write;
      if (now.length > 0) writer.write(now);
      const finish = () => {
        if (later) writer.write(later);
        if (close !== false) writer.end();
      };
      if (later) setTimeout(finish, laterMs);
      else finish();
    }
    this.stdout.setEncoding("utf8");
    this.stdout.on("data", (chunk: string) => this.onStdout(chunk));
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
      this.wake();
    });
    // The tests write after the child may have exited; a broken stdin must not crash them.
    this.stdin.on("error", () => undefined);
    const closed = (stream: NodeJS.ReadableStream) => new Promise<void>((resolve) => stream.on("close", () => resolve()));
    const stdoutEnded = closed(this.stdout);
    const stderrEnded = closed(this.child.stderr);
    this.exited = new Promise<Exit>((resolve) => {
      this.child.on("exit", (code, signal) => {
        const exit = { code, signal };
        let grace: NodeJS.Timeout | undefined;
        // A stdout the test paused (to hold the bridge by backpressure) is not waited for.
        const pipesEnded = Promise.all([this.stdout.isPaused() ? undefined : stdoutEnded, stderrEnded]);
        void Promise.race([pipesEnded, new Promise<void>((r) => (grace = setTimeout(r, 5_000)))]).then(() => {
          clearTimeout(grace);
          this.exitInfo = exit;
          resolve(exit);
          this.wake();
        });
      });
    });
  }

  /** Writes frames (objects are JSON-encoded), one per line, in a single write. */
  send(...frames: Array<object | string>): void {
    this.sendRaw(frames.map((f) => `${typeof f === "string" ? f : JSON.stringify(f)}\n`).join(""));
  }

  /** Writes raw bytes as they are. */
  sendRaw(data: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.stdin.write(data, () => resolve());
    });
  }

  /** Builds a request frame. */
  static request(id: string | number, method: string, params?: object): object {
    return params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params };
  }

  request(id: string | number, method: string, params?: object): void {
    this.send(RawClient.request(id, method, params));
  }

  /** Closes stdin (EOF). */
  end(): void {
    this.stdin.end();
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): void {
    if (this.exitInfo === undefined) this.child.kill(signal);
  }

  /** Waits until a frame matches; returns it. */
  async waitFrame(match: (frame: Frame) => boolean, what = "a matching frame", timeoutMs = DEFAULT_WAIT_MS): Promise<Frame> {
    return this.until(() => this.frames.find(match), what, timeoutMs);
  }

  /** Waits for the response with this id. */
  response(id: string | number, timeoutMs = DEFAULT_WAIT_MS): Promise<Frame> {
    return this.waitFrame((f) => f.id === id && f.method === undefined && ("result" in f || "error" in f), `the response to ${JSON.stringify(id)}`, timeoutMs);
  }

  /** Waits for the next `n` responses with id null (framing errors). */
  async nullIdErrors(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<Frame[]> {
    return this.until(
      () => {
        const found = this.frames.filter((f) => f.id === null && f.error);
        return found.length >= n ? found : undefined;
      },
      `${n} id-null errors`,
      timeoutMs,
    );
  }

  /** Waits until stderr matches (a line logged while the bridge runs); returns all of stderr. */
  stderrMatching(pattern: RegExp | string, timeoutMs = DEFAULT_WAIT_MS): Promise<string> {
    const found = () => (typeof pattern === "string" ? this.stderr.includes(pattern) : pattern.test(this.stderr)) || undefined;
    return this.until(() => (found() ? this.stderr : undefined), `stderr to contain ${String(pattern)}`, timeoutMs);
  }

  /** Closes stdin and waits for the exit: what the bridge wrote on stderr, complete (for
   * assertions that something was never said). */
  async finalStderr(timeoutMs = DEFAULT_WAIT_MS): Promise<string> {
    this.end();
    await this.exit(timeoutMs);
    return this.stderr;
  }

  /** Waits for the exit. */
  async exit(timeoutMs = DEFAULT_WAIT_MS): Promise<Exit> {
    return this.until(() => this.exitInfo, "the process to exit", timeoutMs);
  }

  /** Index of a frame in the stream. */
  indexOf(frame: Frame): number {
    return this.frames.indexOf(frame);
  }

  /** `session.event` notifications of a session, in order. */
  events(sessionId: string): any[] {
    return this.frames.filter((f) => f.method === "session.event" && f.params.sessionId === sessionId).map((f) => f.params.event);
  }

  /** Kills the child if it is still running (afterEach). */
  async dispose(): Promise<void> {
    if (this.exitInfo === undefined) {
      this.child.kill("SIGKILL");
      await this.exited;
    }
    // The FIFOs' ends are this side's own (`pipes`); the child's streams close with it.
    if (this.stdin !== this.child.stdin) this.stdin.destroy();
    if (this.stdout !== this.child.stdout) this.stdout.destroy();
  }

  private async until<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined) return value;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${what}; exit ${JSON.stringify(this.exitInfo)}; last frames:\n${this.lines.slice(-5).join("\n")}\nstderr:\n${this.stderr.slice(-2000)}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== wake);
          resolve();
        }, left);
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        this.waiters.push(wake);
      });
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private onStdout(chunk: string): void {
    this.stdoutBuffer += chunk;
    let nl: number;
    while ((nl = this.stdoutBuffer.indexOf("\n")) !== -1) {
      const line = this.stdoutBuffer.slice(0, nl);
      this.stdoutBuffer = this.stdoutBuffer.slice(nl + 1);
      this.lines.push(line);
      try {
        this.frames.push(JSON.parse(line) as Frame);
      } catch {
        this.badLines.push(line);
      }
    }
    this.wake();
  }
}

/** The `initialize` params most tests use. */
export function initParams(cwd: string, model = "demo", extra: object = {}): object {
  return { cwd, provider: "scripted", model, ...extra };
}

/** A text prompt's params. */
export function promptParams(sessionId: string, text = "hello"): object {
  return { sessionId, contentBlocks: [{ type: "text", text }] };
}
