/**
 * stdin and stdout as the endpoint sees them (src/transport/stdio.ts), on real pipes (FIFOs):
 * the bytes already waiting are the first chunk, read once; the frames answered before the
 * streams exist go out at once and in order; a write that does not fit leaves the rest to the
 * stream; where there is nothing to read, or no pipe, the streams are made at once.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { Socket } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EARLY_READ_BYTES, openStdio, type Stdio } from "../../src/transport/stdio.js";
import { ServerEndpoint } from "../../src/transport/server-endpoint.js";
import { openFifo } from "../support/raw-client.js";

let dir: string;
const opened: number[] = [];
const streams: Socket[] = [];

/** A FIFO's two ends (raw-client.ts `openFifo`), closed after the test. */
function fifo(name: string): { read: number; write: number } {
  const ends = openFifo(path.join(dir, name));
  opened.push(ends.read, ends.write);
  return ends;
}

/** Everything the pipe holds now (its read end is non-blocking). */
function drain(fd: number): string {
  const buffer = Buffer.alloc(1 << 16);
  let text = "";
  for (;;) {
    try {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) return text;
      text += buffer.subarray(0, n).toString();
    } catch {
      return text; // EAGAIN: nothing more now
    }
  }
}

/** A node stream reading or writing `fd` (none: a socket on nothing), destroyed after the test. */
function socketOn(fd: number | undefined, readable: boolean): Socket {
  const socket = fd === undefined ? new Socket() : new Socket({ fd, readable, writable: !readable });
  streams.push(socket);
  return socket;
}

/** The stdio of a bridge whose stdin reads `input.read` and whose stdout writes `output.write`, with node streams on the same descriptors. */
function stdioOn(input: { read: number }, output: { write: number }, debug?: (message: string) => void): Stdio {
  return openStdio({
    fds: [input.read, output.write],
    stdin: () => socketOn(input.read, true) as Readable,
    stdout: () => socketOn(output.write, false) as Writable,
    debug,
  });
}

/** The stdio of a bridge on `input` and `output` whose stdout stream cannot be made; `failures` collects what it reports. */
function withoutStdout(input: { read: number }, output: { write: number }): { stdio: Stdio; failures: string[] } {
  const failures: string[] = [];
  const stdio = openStdio({
    fds: [input.read, output.write],
    stdin: () => new Socket() as Readable,
    stdout: () => {
      throw new Error("no stdout here");
    },
    failed: (error) => failures.push(error.message),
  });
  return { stdio, failures };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Waits until `check` passes. The streams are made once the coalescer is loaded: in the bundle a
 * promise reaction of the same tick, here a module import of its own, which takes longer than
 * that when no test before this one in the worker loaded it (a test run alone, or shuffled).
 */
const whenMade = (check: () => void) => vi.waitFor(check, { timeout: 5_000, interval: 1 });

afterEach(() => {
  for (const socket of streams.splice(0)) socket.destroy();
  for (const fd of opened.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // a socket closed it already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("stdio", () => {
  it("hands the bytes waiting in stdin to the endpoint as its first chunk, and later bytes through the stream, each once, in order", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    writeSync(input.write, "one\ntwo\nthr");
    const debug: string[] = [];
    const stdio = stdioOn(input, output, (m) => debug.push(m));
    const chunks: string[] = [];
    stdio.input.on("data", (chunk) => chunks.push(chunk.toString()));
    stdio.begin();
    expect(chunks).toEqual(["one\ntwo\nthr"]); // at once, before any stream
    // Answered before the streams are made: written at once, through the early descriptor.
    expect(stdio.output.write("a\n")).toBe(true);
    expect(stdio.output.write(Buffer.from("b\n"))).toBe(true);
    expect(drain(output.read)).toBe("a\nb\n");
    await tick();
    await tick();
    writeSync(input.write, "ee\nfour\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(chunks.join("")).toBe("one\ntwo\nthree\nfour\n");
    stdio.output.write("c\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(drain(output.read)).toBe("c\n");
    expect(debug).toEqual(["stdio: 11 bytes read and 4 written before the streams were made"]);
  });

  it("leaves what does not fit in stdout's pipe to the stream: nothing blocks, nothing is lost, the order holds", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    writeSync(input.write, "go\n");
    const stdio = stdioOn(input, output);
    stdio.begin();
    // More than the pipe holds (64 KiB), while nobody reads it: the early write stops at EAGAIN.
    const big = "x".repeat(200_000) + "\n";
    let called = false;
    stdio.output.write(big, () => (called = true));
    stdio.output.write("after\n");
    expect(stdio.output.writableLength).toBeGreaterThan(0); // the rest waits for the stream
    let read = "";
    for (let i = 0; i < 200 && read.length < big.length + 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      read += drain(output.read);
    }
    expect(read).toBe(big + "after\n");
    expect(called).toBe(true);
  });

  it("makes the streams at once where nothing waits in stdin, and holds a pause made before them", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    const debug: string[] = [];
    const stdio = stdioOn(input, output, (m) => debug.push(m));
    const chunks: string[] = [];
    stdio.input.on("data", (chunk) => chunks.push(chunk.toString()));
    stdio.input.pause();
    stdio.begin();
    expect(streams).toHaveLength(0); // made once the coalescer is loaded, never within begin()
    await whenMade(() => expect(streams).toHaveLength(2));
    writeSync(input.write, "late\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(chunks).toEqual([]); // paused before the stream existed: it was made paused
    stdio.input.resume();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(chunks).toEqual(["late\n"]);
    stdio.output.write("answer\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(drain(output.read)).toBe("answer\n");
    expect(debug).toEqual([]);
  });

  it("reads nothing early where stdin is not a pipe (a file)", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const output = fifo("out");
    const file = path.join(dir, "requests");
    writeFileSync(file, "in a file\n");
    const fd = openSync(file, "r");
    opened.push(fd);
    let made = 0;
    const stdio = openStdio({
      fds: [fd, output.write],
      stdin: () => {
        made++;
        return socketOn(undefined, true) as Readable;
      },
      stdout: () => socketOn(output.write, false) as Writable,
    });
    const chunks: string[] = [];
    stdio.input.on("data", (chunk) => chunks.push(chunk.toString()));
    stdio.begin();
    expect(chunks).toEqual([]);
    await whenMade(() => expect(made).toBe(1));
    // The file's bytes are left to the stream: its offset did not move.
    expect(readSync(fd, Buffer.alloc(64), 0, 64, null)).toBe(10);
  });

  it("takes at most a pipe's worth early; the rest of a longer first write comes through the stream", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    // A pipe holds 64 KiB by default: write just that, all of it waiting before the start.
    const line = `${"y".repeat(EARLY_READ_BYTES - 1)}\n`;
    writeSync(input.write, line);
    const stdio = stdioOn(input, output);
    const chunks: Buffer[] = [];
    stdio.input.on("data", (chunk) => chunks.push(Buffer.from(chunk)));
    stdio.begin();
    expect(chunks.map((c) => c.length)).toEqual([EARLY_READ_BYTES]);
    await tick();
    writeSync(input.write, "next\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(Buffer.concat(chunks).toString()).toBe(`${line}next\n`);
  });

  it("says so when the streams cannot be made, instead of never reading", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    const { stdio, failures } = withoutStdout(input, output);
    stdio.begin();
    await whenMade(() => expect(failures).toEqual(["no stdout here"]));
  });

  it("says so once, and leaves no rejection unhandled, when the streams cannot be made after an answer too big for stdout's pipe was written inside the first chunk", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    writeSync(input.write, "bad\n");
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      // The coalescer loaded already (as in the bundle, where it is one module of the main file).
      await import("../../src/transport/coalescing-writable.js");
      const { stdio, failures } = withoutStdout(input, output);
      // A line's error answered in the data event itself (as the endpoint answers a bad line), more than the pipe holds: the early write gives up inside begin().
      stdio.input.on("data", () => stdio.output.write(`${"e".repeat(100_000)}\n`));
      stdio.begin();
      await whenMade(() => expect(failures).toEqual(["no stdout here"]));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("holds the output waiting for a client that does not read near the endpoint's bound when the first chunk's answers are many times its size, and answers every line once, in order, once the client reads", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "stdio-"));
    const input = fifo("in");
    const output = fifo("out");
    // A pipe's worth of bad lines waiting at the start: each one a parse error ~150 bytes long, ~5 MB of answers.
    const lines = EARLY_READ_BYTES / 2;
    writeSync(input.write, "x\n".repeat(lines));
    const stdio = stdioOn(input, output);
    const maxQueuedOutputBytes = 256 * 1024;
    const endpoint = new ServerEndpoint({ input: stdio.input, output: stdio.output, maxQueuedOutputBytes });
    endpoint.start();
    stdio.begin();
    await whenMade(() => expect(streams).toHaveLength(2));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The stream path stops reading once more than the bound waits: a frame or a batch over it, no more.
    expect(stdio.output.writableLength).toBeLessThan(maxQueuedOutputBytes + 256 * 1024);
    let read = "";
    for (let i = 0; i < 2_000 && read.split("\n").length <= lines; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      read += drain(output.read);
    }
    const frames = read.trimEnd().split("\n").map((line) => JSON.parse(line) as { id: unknown; error?: { code: number } });
    expect(frames).toHaveLength(lines);
    expect(frames.every((f) => f.id === null && f.error?.code === -32700)).toBe(true);
  });
});
