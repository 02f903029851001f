/**
 * The transport on raw bytes: PassThrough streams into a ServerEndpoint, frames read back off
 * its output. Covers framing, the classification of input lines, the line limit, error
 * mapping, ordering, flush/close, backpressure and a broken output.
 */
import { PassThrough, Writable } from "node:stream";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ErrorCode, RpcError } from "../../src/protocol/errors.js";
import type { Logger } from "../../src/log.js";
import { ServerEndpoint, type RequestHandler, type ServerEndpointOptions } from "../../src/transport/server-endpoint.js";

interface Harness {
  endpoint: ServerEndpoint;
  input: PassThrough;
  output: PassThrough;
  frames: any[];
  raw: () => string;
  debug: string[];
  calls: Array<{ method: string; params: unknown }>;
  /** Resolves once `n` frames were written. */
  waitFrames: (n: number) => Promise<any[]>;
  /** Lets pending microtasks and I/O callbacks run. */
  settle: () => Promise<void>;
}

const echo: RequestHandler = (method, params) => ({ method, params: params ?? null });

const open: Harness[] = [];

function harness(handler: RequestHandler | null = echo, options: Partial<ServerEndpointOptions> = {}): Harness {
  const input = new PassThrough();
  const output = new PassThrough();
  const debug: string[] = [];
  const logger: Logger = { debug: (m) => debug.push(typeof m === "function" ? m() : m), info: () => undefined, warn: () => undefined, error: () => undefined };
  const calls: Harness["calls"] = [];
  const endpoint = new ServerEndpoint({ input, output, logger, ...options });
  if (handler) {
    endpoint.onRequest((method, params, ctx) => {
      calls.push({ method, params });
      return handler(method, params, ctx);
    });
  }
  let text = "";
  const frames: any[] = [];
  const listeners: Array<() => void> = [];
  output.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
    const lines = text.split("\n");
    text = lines.pop() ?? "";
    for (const line of lines) frames.push(JSON.parse(line));
    for (const l of listeners.splice(0)) l();
  });
  let all = "";
  output.on("data", (chunk: Buffer) => {
    all += chunk.toString("utf8");
  });
  endpoint.start();
  const h: Harness = {
    endpoint,
    input,
    output,
    frames,
    raw: () => all,
    debug,
    calls,
    waitFrames: async (n) => {
      const deadline = Date.now() + 10_000;
      while (frames.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} frames, got ${frames.length}: ${JSON.stringify(frames)}`);
        await new Promise<void>((resolve) => {
          listeners.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return frames;
    },
    settle: async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    },
  };
  open.push(h);
  return h;
}

afterEach(() => {
  for (const h of open.splice(0)) {
    h.endpoint.close();
    h.input.destroy();
    h.output.destroy();
  }
});

const req = (id: unknown, method = "echo", params?: unknown) => JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });

describe("framing", () => {
  it("answers one object per line, tolerates \\r\\n and ignores blank lines", async () => {
    const h = harness();
    h.input.write(`${req(1)}\n${req(2)}\r\n\n   \n\r\n${req(3, "echo", { a: 1 })}\n`);
    const frames = await h.waitFrames(3);
    await h.settle();
    expect(frames).toEqual([
      { jsonrpc: "2.0", id: 1, result: { method: "echo", params: null } },
      { jsonrpc: "2.0", id: 2, result: { method: "echo", params: null } },
      { jsonrpc: "2.0", id: 3, result: { method: "echo", params: { a: 1 } } },
    ]);
    // Every output frame is exactly one line ending in \n.
    expect(h.raw().endsWith("\n")).toBe(true);
    expect(h.raw().split("\n").filter(Boolean)).toHaveLength(3);
  });

  it("joins a request split across many chunks", async () => {
    const h = harness();
    const line = `${req("split", "echo", { text: "abc" })}\n`;
    for (let i = 0; i < line.length; i += 7) h.input.write(line.slice(i, i + 7));
    const [frame] = await h.waitFrames(1);
    expect(frame).toEqual({ jsonrpc: "2.0", id: "split", result: { method: "echo", params: { text: "abc" } } });
  });

  it("decodes a multibyte character split across two chunks", async () => {
    const h = harness();
    const text = "héllo € 😀 中文";
    const bytes = Buffer.from(`${req(1, "echo", { text })}\n`, "utf8");
    const emoji = bytes.indexOf(Buffer.from("😀", "utf8"));
    expect(emoji).toBeGreaterThan(0);
    h.input.write(bytes.subarray(0, emoji + 2)); // cut inside the 4-byte emoji
    h.input.write(bytes.subarray(emoji + 2));
    const [frame] = await h.waitFrames(1);
    expect(frame.result.params.text).toBe(text);
  });

  it("decodes multibyte text delivered one byte at a time", async () => {
    const h = harness();
    const text = "ünïcödé — ☃ 𝄞 emoji 🎉";
    const bytes = Buffer.from(`${req(7, "echo", { text })}\n${req(8, "echo", { text })}\n`, "utf8");
    for (const byte of bytes) h.input.write(Buffer.from([byte]));
    const frames = await h.waitFrames(2);
    expect(frames.map((f) => f.result.params.text)).toEqual([text, text]);
    expect(frames.map((f) => f.id)).toEqual([7, 8]);
  });

  it("serves a last line without a newline at EOF, then reports the end once", async () => {
    const onInputEnd = vi.fn();
    const h = harness(echo, { onInputEnd });
    h.input.end(req("last"));
    const [frame] = await h.waitFrames(1);
    expect(frame.id).toBe("last");
    await h.settle();
    expect(onInputEnd).toHaveBeenCalledTimes(1);
  });
});

describe("classification of input lines", () => {
  it("malformed JSON → -32700 with id null, and the endpoint keeps serving", async () => {
    const h = harness();
    h.input.write(`{"jsonrpc":"2.0","id":1,"method":\n${req(2)}\n`);
    const frames = await h.waitFrames(2);
    expect(frames[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.ParseError } });
    expect(frames[1]).toMatchObject({ id: 2, result: { method: "echo" } });
    expect(h.calls).toHaveLength(1);
  });

  it.each([
    ["an array (batch)", `[${req(1)}]`],
    ["an empty array", "[]"],
    ["a number", "42"],
    ["a string", '"hello"'],
    ["null", "null"],
    ["true", "true"],
  ])("%s → -32600 with id null", async (_what, line) => {
    const h = harness();
    h.input.write(`${line}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.InvalidRequest } });
    expect(h.calls).toHaveLength(0);
  });

  it.each([
    ["no jsonrpc", { id: 5, method: "echo" }, 5],
    ["jsonrpc 1.0", { jsonrpc: "1.0", id: "a", method: "echo" }, "a"],
    ["jsonrpc as number 2", { jsonrpc: 2, id: 6, method: "echo" }, 6],
    ["null id", { jsonrpc: "2.0", id: null, method: "echo" }, null],
    ["object id", { jsonrpc: "2.0", id: { x: 1 }, method: "echo" }, null],
    ["boolean id", { jsonrpc: "2.0", id: true, method: "echo" }, null],
    ["non-string method", { jsonrpc: "2.0", id: 9, method: 42 }, 9],
    ["null method", { jsonrpc: "2.0", id: "m", method: null }, "m"],
    ["scalar params", { jsonrpc: "2.0", id: 10, method: "echo", params: 3 }, 10],
    ["null params", { jsonrpc: "2.0", id: 11, method: "echo", params: null }, 11],
    ["no method, only an id", { jsonrpc: "2.0", id: 12 }, 12],
    ["neither method nor id", { jsonrpc: "2.0" }, null],
  ])("request with %s → -32600 (id %j)", async (_what, frame, id) => {
    const h = harness();
    h.input.write(`${JSON.stringify(frame)}\n`);
    const [out] = await h.waitFrames(1);
    expect(out).toMatchObject({ jsonrpc: "2.0", id, error: { code: ErrorCode.InvalidRequest } });
    expect(typeof out.error.message).toBe("string");
    expect(h.calls).toHaveLength(0);
  });

  it("array params → -32602 with the id", async () => {
    const h = harness();
    h.input.write(`${req(13, "echo", [1, 2])}\n`);
    const [out] = await h.waitFrames(1);
    expect(out).toMatchObject({ jsonrpc: "2.0", id: 13, error: { code: ErrorCode.InvalidParams } });
    expect(h.calls).toHaveLength(0);
  });

  it("ignores notification-shaped and response-shaped frames, logs them at debug, keeps serving", async () => {
    const h = harness();
    h.input.write(
      [
        JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "x" } }),
        JSON.stringify({ jsonrpc: "2.0", method: "whatever" }),
        JSON.stringify({ jsonrpc: "2.0", id: 99, result: { ok: true } }),
        JSON.stringify({ jsonrpc: "2.0", id: 98, error: { code: 1, message: "no" } }),
        JSON.stringify({ jsonrpc: "2.0", id: null, result: null }),
        req("after"),
      ].join("\n") + "\n",
    );
    const frames = await h.waitFrames(1);
    await h.settle();
    expect(frames).toEqual([{ jsonrpc: "2.0", id: "after", result: { method: "echo", params: null } }]);
    expect(h.calls.map((c) => c.method)).toEqual(["echo"]);
    expect(h.debug.filter((l) => /notification-shaped/.test(l))).toHaveLength(2);
    expect(h.debug.filter((l) => /response-shaped/.test(l))).toHaveLength(3);
  });
});

describe("line limit", () => {
  it("discards a line over maxLineBytes with one -32600 (id null) and serves the next line", async () => {
    const h = harness(echo, { maxLineBytes: 64 });
    const long = req(1, "echo", { text: "x".repeat(200) });
    h.input.write(`${long}\n${req(2)}\n`);
    const frames = await h.waitFrames(2);
    await h.settle();
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ id: null, error: { code: ErrorCode.InvalidRequest } });
    expect(frames[1]).toMatchObject({ id: 2, result: { method: "echo" } });
    expect(h.calls).toHaveLength(1);
  });

  it("reports an oversized line that arrives in many chunks exactly once", async () => {
    const h = harness(echo, { maxLineBytes: 64 });
    for (let i = 0; i < 50; i++) h.input.write("y".repeat(30));
    h.input.write(`\n${req("next")}\n`);
    const frames = await h.waitFrames(2);
    await h.settle();
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ id: null, error: { code: ErrorCode.InvalidRequest } });
    expect(frames[1]).toMatchObject({ id: "next" });
  });

  it("accepts a line of exactly maxLineBytes (multibyte counted in bytes)", async () => {
    const probe = req(1, "echo", { t: "" });
    const limit = Buffer.byteLength(probe) + 6; // room for two 3-byte characters
    const h = harness(echo, { maxLineBytes: limit });
    h.input.write(`${req(1, "echo", { t: "€€" })}\n`);
    h.input.write(`${req(2, "echo", { t: "€€€" })}\n`); // 3 bytes over
    const frames = await h.waitFrames(2);
    // The discard is reported synchronously, the answer after its handler: find each by id.
    expect(frames.find((f) => f.id === 1)).toMatchObject({ result: { params: { t: "€€" } } });
    expect(frames.find((f) => f.id === null)).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    expect(h.calls).toHaveLength(1);
  });

  it("does not buffer a 50 MiB line whole (maxLineBytes 1 KiB)", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const h = harness(echo, { maxLineBytes: 1024 });
    const chunk = Buffer.alloc(64 * 1024, 0x61); // reused: only a buffering reader would allocate
    gc();
    const before = process.memoryUsage();
    let peak = 0;
    const total = 50 * 1024 * 1024;
    for (let sent = 0; sent < total; sent += chunk.length) {
      await new Promise<void>((resolve) => h.input.write(chunk, () => resolve()));
      if (sent % (4 * 1024 * 1024) === 0) {
        const now = process.memoryUsage();
        peak = Math.max(peak, now.arrayBuffers - before.arrayBuffers, now.heapUsed - before.heapUsed);
      }
    }
    gc();
    const after = process.memoryUsage();
    peak = Math.max(peak, after.arrayBuffers - before.arrayBuffers, after.heapUsed - before.heapUsed);
    h.input.write(`\n${req("alive")}\n`);
    const frames = await h.waitFrames(2);
    await h.settle();
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ id: null, error: { code: ErrorCode.InvalidRequest } });
    expect(frames[1]).toMatchObject({ id: "alive", result: { method: "echo" } });
    // A reader that kept the line would hold 50 MiB (the chunk is reused, so only copies count).
    expect(peak).toBeLessThan(20 * 1024 * 1024);
  }, 60_000);
});

describe("error mapping", () => {
  it("a handler failure → -32603 carrying the error's message", async () => {
    const h = harness(async () => {
      throw new Error("disk on fire");
    });
    h.input.write(`${req(1)}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: ErrorCode.InternalError } });
    expect(frame.error.message).toContain("disk on fire");
  });

  it("a handler that throws synchronously → -32603, and the endpoint keeps serving", async () => {
    let first = true;
    const h = harness(() => {
      if (first) {
        first = false;
        throw new TypeError("sync boom");
      }
      return "fine";
    });
    h.input.write(`${req(1)}\n${req(2)}\n`);
    const frames = await h.waitFrames(2);
    expect(frames[0]).toMatchObject({ id: 1, error: { code: ErrorCode.InternalError } });
    expect(frames[0].error.message).toContain("sync boom");
    expect(frames[1]).toEqual({ jsonrpc: "2.0", id: 2, result: "fine" });
  });

  it("a result that cannot be encoded (nested past JSON.stringify's stack) → -32603 for that request, and the endpoint keeps serving", async () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const h = harness((method) => (method === "deep" ? { deep } : "fine"));
    h.input.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "deep" })}\n${req(2)}\n`);
    const frames = await h.waitFrames(2);
    expect(frames[0]).toMatchObject({ id: 1, error: { code: ErrorCode.InternalError, data: { kind: "internal-error" } } });
    expect(frames[0].error.message).toContain("could not be encoded");
    expect(frames[1]).toEqual({ jsonrpc: "2.0", id: 2, result: "fine" });
  });

  it("an RpcError → its code, message and data", async () => {
    const h = harness(async () => {
      throw new RpcError(ErrorCode.SessionBusy, "session s is busy", { kind: "session-busy", sessionId: "s" });
    });
    h.input.write(`${req("r")}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toEqual({ jsonrpc: "2.0", id: "r", error: { code: -32001, message: "session s is busy", data: { kind: "session-busy", sessionId: "s" } } });
  });

  it("an unknown method reported by the handler → -32601", async () => {
    const h = harness((method) => {
      if (method !== "known") throw new RpcError(ErrorCode.MethodNotFound, `method not found: ${method}`, { kind: "method-not-found" });
      return {};
    });
    h.input.write(`${req(1, "nope")}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toMatchObject({ id: 1, error: { code: -32601, data: { kind: "method-not-found" } } });
  });

  it("a request before any handler is installed → -32603", async () => {
    const h = harness(null);
    h.input.write(`${req(1)}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toMatchObject({ id: 1, error: { code: ErrorCode.InternalError } });
  });

  it("a handler resolving undefined answers result {}", async () => {
    const h = harness(async () => undefined);
    h.input.write(`${req(1)}\n`);
    const [frame] = await h.waitFrames(1);
    expect(frame).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
  });
});

describe("ordering, flush and close", () => {
  it("notifications a handler emits (awaited or not) precede its response", async () => {
    let endpoint!: ServerEndpoint;
    const h = harness(async (method) => {
      if (method === "fire-and-forget") {
        for (let i = 0; i < 5; i++) void endpoint.notify("session.event", { sessionId: "a", event: { seq: i } } as never);
        return "ff";
      }
      for (let i = 0; i < 5; i++) {
        await endpoint.notify("session.event", { sessionId: "b", event: { seq: i } } as never);
        await new Promise((r) => setImmediate(r));
      }
      return "awaited";
    });
    endpoint = h.endpoint;
    h.input.write(`${req(1, "fire-and-forget")}\n`);
    await h.waitFrames(6);
    h.input.write(`${req(2, "awaited")}\n`);
    const frames = await h.waitFrames(12);
    expect(frames.slice(0, 5).every((f) => f.method === "session.event" && f.params.sessionId === "a")).toBe(true);
    expect(frames[5]).toEqual({ jsonrpc: "2.0", id: 1, result: "ff" });
    expect(frames.slice(6, 11).map((f) => f.params.event.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(frames[11]).toEqual({ jsonrpc: "2.0", id: 2, result: "awaited" });
    // Notifications carry no id.
    expect(frames.filter((f) => f.method).every((f) => !("id" in f) && f.jsonrpc === "2.0")).toBe(true);
  });

  it("flush() resolves only after every frame was handed to the output", async () => {
    const written: string[] = [];
    const output = new Writable({
      highWaterMark: 256,
      write(chunk: Buffer, _enc, cb) {
        setTimeout(() => {
          // flush() waits behind the frames with an empty write of its own: no bytes, no frame.
          if (chunk.length > 0) written.push(chunk.toString());
          cb();
        }, 1);
      },
    });
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output });
    for (let i = 0; i < 50; i++) void endpoint.notify("session.event", { sessionId: "s", event: { seq: i } } as never);
    expect(written.length).toBeLessThan(50);
    await endpoint.flush();
    expect(written).toHaveLength(50);
    expect(JSON.parse(written[49]).params.event.seq).toBe(49);
    input.destroy();
  });

  it("close() stops dispatching, even for lines already read in the same chunk", async () => {
    let endpoint!: ServerEndpoint;
    const h = harness((method) => {
      if (method === "close") endpoint.close();
      return method;
    });
    endpoint = h.endpoint;
    h.input.write(`${req(1, "close")}\n${req(2, "after")}\n`);
    await h.waitFrames(1);
    h.input.write(`${req(3, "later")}\n`);
    await new Promise((r) => setTimeout(r, 50));
    await h.settle();
    expect(h.calls.map((c) => c.method)).toEqual(["close"]);
    // The response of the request in flight is still written.
    expect(h.frames).toEqual([{ jsonrpc: "2.0", id: 1, result: "close" }]);
  });
});

describe("backpressure", () => {
  it("holds a producer awaiting notify() so the output buffer stays bounded", async () => {
    const hwm = 4096;
    let received = 0;
    let lastSeq = -1;
    let inOrder = true;
    let tail = "";
    const output = new Writable({
      highWaterMark: hwm,
      write(chunk: Buffer, _enc, cb) {
        const lines = (tail + chunk.toString()).split("\n");
        tail = lines.pop() ?? "";
        for (const line of lines) {
          const seq = JSON.parse(line).params.event.seq;
          if (seq !== lastSeq + 1) inOrder = false;
          lastSeq = seq;
          received++;
        }
        setImmediate(cb); // a slow reader: one chunk per turn of the event loop
      },
    });
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output });
    const count = 100_000;
    let maxBuffered = 0;
    let held = 0;
    for (let i = 0; i < count; i++) {
      const p = endpoint.notify("session.event", { sessionId: "s", event: { type: "assistant/chunk", seq: i, data: { text: "0123456789" } } } as never);
      maxBuffered = Math.max(maxBuffered, output.writableLength);
      let done = false;
      void p.then(() => {
        done = true;
      });
      await Promise.resolve();
      if (!done) held++;
      await p;
    }
    await endpoint.flush();
    expect(received).toBe(count);
    expect(inOrder).toBe(true);
    expect(held).toBeGreaterThan(0); // the producer really was made to wait
    expect(maxBuffered).toBeLessThan(4 * hwm);
    input.destroy();
  }, 120_000);
});

describe("a frame holding a long string", () => {
  /** A client reading one chunk per turn of the event loop, keeping what it reads. */
  function slowOutput(hwm: number) {
    const chunks: Buffer[] = [];
    let maxQueued = 0;
    const output = new Writable({
      highWaterMark: hwm,
      write(chunk: Buffer, _enc, cb) {
        chunks.push(Buffer.from(chunk));
        maxQueued = Math.max(maxQueued, output.writableLength);
        setImmediate(cb);
      },
    });
    return { output, frames: () => Buffer.concat(chunks).toString().split("\n").filter(Boolean).map((l) => JSON.parse(l)), maxQueued: () => maxQueued };
  }

  it("is written one piece at a time as the output drains, and frames made meanwhile follow it in order", async () => {
    const client = slowOutput(4096);
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output: client.output });
    endpoint.onRequest(async () => {
      const text = "é0123456789abcdef".repeat(256 * 1024); // 4.5 MB of text, 4.75 MB of UTF-8
      const message = endpoint.notify("session.event", { sessionId: "s", event: { seq: 0, text } } as never);
      let held = true;
      void message.then(() => {
        held = false;
      });
      await new Promise((r) => setImmediate(r));
      expect(held).toBe(true); // the producer waits until the whole message has gone out
      for (let seq = 1; seq <= 3; seq++) void endpoint.notify("session.event", { sessionId: "s", event: { seq } } as never);
      await message;
      return "done";
    });
    endpoint.start();
    input.write(`${req(1)}\n`);
    await new Promise((r) => setTimeout(r, 50));
    await endpoint.flush();
    const frames = client.frames();
    expect(frames.map((f) => f.params?.event.seq ?? f.result)).toEqual([0, 1, 2, 3, "done"]);
    expect(frames[0].params.event.text).toBe("é0123456789abcdef".repeat(256 * 1024));
    // Written whole, the message would have waited in the output's buffer: 4.75 MB.
    expect(client.maxQueued()).toBeLessThan(4 * 64 * 1024);
    input.destroy();
  }, 30_000);

  it("is waited for by a flush() made while it is still being written, with the frames behind it", async () => {
    const client = slowOutput(4096);
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output: client.output });
    const text = "x".repeat(1024 * 1024);
    void endpoint.notify("session.event", { sessionId: "s", event: { seq: 0, text } } as never);
    void endpoint.notify("session.event", { sessionId: "s", event: { seq: 1 } } as never);
    await endpoint.flush();
    const frames = client.frames();
    expect(frames.map((f) => f.params.event.seq)).toEqual([0, 1]);
    expect(frames[0].params.event.text).toBe(text);
    input.destroy();
  });

  it("is given up, with what waits behind it, when the output breaks: flush() and producers do not hang", async () => {
    let fail: ((e: Error) => void) | undefined;
    const onOutputClosed = vi.fn();
    const output = new Writable({
      highWaterMark: 16,
      write(_chunk, _enc, cb) {
        fail = cb; // a client that stopped reading
      },
    });
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output, onOutputClosed });
    const message = endpoint.notify("session.event", { sessionId: "s", event: { text: "x".repeat(1024 * 1024) } } as never);
    const after = endpoint.notify("session.event", { sessionId: "s", event: { seq: 1 } } as never);
    const flushed = endpoint.flush();
    let settled = false;
    void Promise.all([message, after, flushed]).then(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    fail?.(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    await Promise.all([message, after, flushed]);
    expect(onOutputClosed).toHaveBeenCalledTimes(1);
    input.destroy();
  });
});

describe("releaseProducers", () => {
  it("releases a producer held by backpressure, and later notify() calls no longer wait", async () => {
    const output = new Writable({
      highWaterMark: 16,
      write() {
        // never completes: a client that stopped reading
      },
    });
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output });
    const held = endpoint.notify("session.event", { sessionId: "s", event: { pad: "x".repeat(100) } } as never);
    let released = false;
    void held.then(() => {
      released = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(released).toBe(false);
    endpoint.releaseProducers();
    await held;
    await expect(endpoint.notify("session.event", { sessionId: "s", event: {} } as never)).resolves.toBeUndefined();
    input.destroy();
  });
});

describe("a broken output (EPIPE)", () => {
  it("calls onOutputClosed once, does not throw, and later writes are dropped", async () => {
    const onOutputClosed = vi.fn();
    let writes = 0;
    const output = new Writable({
      write(_chunk, _enc, cb) {
        writes++;
        cb(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
    });
    const input = new PassThrough();
    let endpoint!: ServerEndpoint;
    endpoint = new ServerEndpoint({ input, output, onOutputClosed });
    endpoint.onRequest(async () => {
      await endpoint.notify("session.event", { sessionId: "s", event: {} } as never);
      return "x";
    });
    endpoint.start();
    input.write(`${req(1)}\n${req(2)}\n`);
    await new Promise((r) => setTimeout(r, 50));
    // Further notifications and frames neither throw nor hang.
    await expect(endpoint.notify("session.event", { sessionId: "s", event: {} } as never)).resolves.toBeUndefined();
    input.write(`${req(3)}\n`);
    await new Promise((r) => setTimeout(r, 20));
    await expect(endpoint.flush()).resolves.toBeUndefined();
    output.emit("error", Object.assign(new Error("again"), { code: "EPIPE" }));
    expect(onOutputClosed).toHaveBeenCalledTimes(1);
    expect((onOutputClosed.mock.calls[0][0] as NodeJS.ErrnoException).code).toBe("EPIPE");
    expect(writes).toBe(1);
    input.destroy();
  });

  it("a producer held by backpressure is released when the output breaks", async () => {
    const onOutputClosed = vi.fn();
    let fail: ((e: Error) => void) | undefined;
    const output = new Writable({
      highWaterMark: 16,
      write(_chunk, _enc, cb) {
        fail = cb; // never completes until we break it
      },
    });
    const input = new PassThrough();
    const endpoint = new ServerEndpoint({ input, output, onOutputClosed });
    const held = endpoint.notify("session.event", { sessionId: "s", event: { pad: "x".repeat(100) } } as never);
    let released = false;
    void held.then(() => {
      released = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(released).toBe(false);
    fail?.(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    await held;
    expect(onOutputClosed).toHaveBeenCalledTimes(1);
    await expect(endpoint.flush()).resolves.toBeUndefined();
    input.destroy();
  });
});
