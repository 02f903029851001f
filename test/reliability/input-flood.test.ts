/**
 * A client that floods the bridge with bad input and does not read stdout. Every bad line gets
 * an error reply (~130 bytes for a 2-byte line), and replies are not held back by the
 * producers' backpressure, so without flow control the bridge would queue them in memory
 * without bound (measured: 1M junk lines took it from 50 MB to 840 MB). The transport stops
 * reading input while more than `maxQueuedOutputBytes` of output wait for the client, and reads
 * on once they drained: memory stays bounded, and every line is still answered exactly once.
 */
import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { LineReader } from "../../src/transport/line-reader.js";
import { ServerEndpoint, type RequestHandler } from "../../src/transport/server-endpoint.js";
import { cut, cutsArb } from "./support/fuzz-frames.js";
import { BINARY } from "../support/raw-client.js";
import { peakRss, waitFor } from "./support/procs.js";

const junk = (lines: number) => Buffer.from("x\n".repeat(lines));

describe("the line reader's pause", () => {
  it("paused at random lines (from inside onLine) and resumed later, it emits the same lines in order, and ends after them", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 12 }).map((t) => t.replace(/[\r\n]/g, "")), { maxLength: 30 }),
        cutsArb,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        (texts, cuts, pauses, lastWithoutNewline) => {
          let text = texts.map((t) => `${t}\n`).join("");
          if (lastWithoutNewline) text = text.replace(/\n$/, "");
          const bytes = Buffer.from(text);
          const events: string[] = [];
          let k = 0;
          const reader: LineReader = new LineReader({
            maxLineBytes: 1000,
            onLine: (line) => {
              events.push(line);
              if (pauses[k++ % pauses.length]) reader.pause();
            },
            onOverflow: () => events.push("<overflow>"),
            onEnd: () => events.push("<end>"),
          });
          for (const chunk of cut(bytes, cuts)) {
            reader.push(chunk);
            if (pauses[k % pauses.length]) reader.resume();
          }
          reader.end();
          for (let i = 0; i < 1000 && events.at(-1) !== "<end>"; i++) reader.resume();
          const expected = texts.filter((t, i) => !(lastWithoutNewline && i === texts.length - 1 && t === ""));
          expect(events).toEqual([...expected, "<end>"]);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("input flow control, in process", () => {
  const open: Array<{ endpoint: ServerEndpoint; input: PassThrough; output: PassThrough }> = [];
  afterEach(() => {
    for (const h of open.splice(0)) {
      h.endpoint.close();
      h.input.destroy();
      h.output.destroy();
    }
  });

  /** An endpoint that stops reading input while more than `cap` bytes wait for the client; nobody reads its output yet. */
  function capped(cap: number, handler: RequestHandler = () => ({})) {
    const input = new PassThrough();
    // The output's high-water mark stated, below the caps used here, as the bridge's own
    // (coalescing-writable.ts) is below its 1 MiB cap: Node 22+ made the default 64 KiB (16 KiB
    // before), which would equal a 64 KiB cap and hold input by the producer's wait alone.
    const output = new PassThrough({ highWaterMark: 16 * 1024 });
    const endpoint = new ServerEndpoint({ input, output, maxQueuedOutputBytes: cap });
    open.push({ endpoint, input, output });
    endpoint.onRequest(handler);
    endpoint.start();
    return { endpoint, input, output };
  }

  it("stops reading while the output queue is over the cap, reads on once drained, answers every line once", async () => {
    const { input, output } = capped(64 * 1024);
    // Nobody reads the output yet. 20 000 junk lines in 2 000-line chunks.
    for (let i = 0; i < 10; i++) input.write(junk(2000));
    await new Promise((r) => setImmediate(r));
    expect(input.isPaused()).toBe(true);
    // Bounded: the cap, plus the one reply that crossed it (input stops mid-chunk).
    expect(output.writableLength).toBeGreaterThan(64 * 1024);
    expect(output.writableLength).toBeLessThan(64 * 1024 + 1024);
    expect(input.readableLength).toBeGreaterThan(0);

    // The client reads: everything is answered, once.
    let text = "";
    output.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    expect(await waitFor(() => text.split("\n").length - 1 === 20_000, 15_000)).toBe(true);
    const frames = text.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(frames.every((f) => f.id === null && f.error.code === -32700)).toBe(true);
    expect(input.isPaused()).toBe(false);
    // And it serves as before.
    input.write('{"jsonrpc":"2.0","id":"after","method":"m"}\n');
    expect(await waitFor(() => text.includes('"id":"after"'), 5_000)).toBe(true);
  });

  it("replies waiting behind a long frame count toward the cap: input stops, and after the frame every line is answered once", async () => {
    // A cap above the long frame's pieces in the output's buffer: only the replies behind it can reach it.
    const { endpoint, input, output } = capped(512 * 1024);
    // A 4 MB message that the client does not read: a few pieces go out, the rest waits unencoded.
    const text = "z".repeat(4 * 1024 * 1024);
    void endpoint.notify("session.event" as never, { text } as never);
    for (let i = 0; i < 10; i++) input.write(junk(2000));
    await new Promise((r) => setImmediate(r));
    expect(input.isPaused()).toBe(true);
    expect(input.readableLength).toBeGreaterThan(0);
    expect(output.writableLength).toBeLessThan(256 * 1024);

    let received = "";
    output.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")));
    expect(await waitFor(() => received.split("\n").length - 1 === 20_001, 15_000)).toBe(true);
    const frames = received.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(frames[0].params.text).toBe(text);
    expect(frames.slice(1).every((f) => f.id === null && f.error.code === -32700)).toBe(true);
    expect(input.isPaused()).toBe(false);
  });

  it("a producer held by backpressure does not pause input: requests (a cancel, a shutdown) still get in", async () => {
    const seen: string[] = [];
    const { endpoint, input, output } = capped(64 * 1024, (method) => {
      seen.push(method);
      return {};
    });
    // A turn streams into a client that stopped reading: it waits at the high-water mark.
    let held = false;
    void (async () => {
      for (let i = 0; i < 1000; i++) {
        const wait = endpoint.notify("session.event" as never, { n: i, pad: "y".repeat(100) } as never);
        held = true;
        await wait;
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    expect(held).toBe(true);
    expect(output.writableLength).toBeLessThan(64 * 1024);
    input.write('{"jsonrpc":"2.0","id":1,"method":"session/cancel"}\n{"jsonrpc":"2.0","id":2,"method":"shutdown"}\n');
    expect(await waitFor(() => seen.length === 2, 5_000)).toBe(true);
    expect(input.isPaused()).toBe(false);
  });
});

describe("input flow control, through the binary", () => {
  it("a flood of junk from a client that does not read: memory stays bounded, every line is answered once, it keeps serving", async () => {
    const child = spawn(BINARY, ["--stdio", "--no-session-log"], { stdio: ["pipe", "pipe", "pipe"] });
    try {
      child.stdin.on("error", () => undefined);
      // The baseline is taken once start-up is over: the bridge has answered a first junk line.
      // (A fixed wait was too short on a busy machine, and start-up's memory counted as growth.)
      await new Promise<void>((resolve, reject) => {
        let first = "";
        const onData = (chunk: Buffer) => {
          first += chunk.toString("utf8");
          if (!first.includes("\n")) return;
          child.stdout.off("data", onData);
          child.stdout.pause();
          resolve();
        };
        child.stdout.on("data", onData);
        child.once("exit", (code) => reject(new Error(`the bridge exited (${code}) at start-up`)));
        child.stdin.write("x\n");
      });
      const before = peakRss(child.pid!);
      const LINES = 200_000;
      const block = junk(10_000);
      let taken = 0;
      for (let i = 0; i < LINES / 10_000; i++) child.stdin.write(block, () => taken++);
      // Without flow control the bridge reads all of it and queues ~100 MB of replies in 2 s;
      // with it, it stops after about 1 MiB of replies. (The wait only bounds the flood.)
      await waitFor(() => taken === LINES / 10_000, 2_000);
      expect(peakRss(child.pid!) - before).toBeLessThan(48 * 1024 * 1024);
      expect(taken).toBeLessThan(LINES / 10_000);

      let newlines = 0;
      let tail = "";
      let bad = 0;
      child.stdout.on("data", (chunk: Buffer) => {
        const text = tail + chunk.toString("utf8");
        const lines = text.split("\n");
        tail = lines.pop() ?? "";
        for (const line of lines) {
          newlines++;
          if (!line.startsWith('{"jsonrpc":"2.0","id":null,"error":{"code":-32700')) bad++;
        }
      });
      child.stdout.resume();
      // Once the client reads, every line is answered, once.
      expect(await waitFor(() => newlines === LINES, 60_000)).toBe(true);
      expect(bad).toBe(0);

      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.stdin.write('{"jsonrpc":"2.0","id":"still","method":"shutdown"}\n');
      expect(await waitFor(() => newlines === LINES + 1, 15_000)).toBe(true);
      expect(await exited).toBe(0);
      expect(tail).toBe("");
    } finally {
      child.kill("SIGKILL");
    }
  }, 90_000);
});
