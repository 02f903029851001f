/**
 * Transport fuzzing (property-based, fast-check): random lines — well-formed requests mixed with
 * random bytes, random JSON, frame-like objects with wrong fields, truncated UTF-8, ids a
 * JavaScript number cannot echo, blank and oversized lines — concatenated and cut into chunks
 * at random byte offsets, fed to
 *
 *  1. a `ServerEndpoint` in process (with handlers that answer at once, later, with
 *     notifications first, with an RpcError, or by throwing), then EOF;
 *  2. the built binary: one process for the whole run, case after case, then a real turn and
 *     `shutdown`.
 *
 * Each time: stdout carries protocol frames only (valid UTF-8, one JSON-RPC object per line),
 * every line gets exactly the response the contract gives it (an oracle predicts the multiset:
 * id and error code, or the echoed result) — so each well-formed request among the garbage is
 * answered exactly once, with its id — the id-null errors come in line order, and the process
 * keeps serving.
 *
 * A few hundred cases run in the suite. The long run (see docs/guarantees.md):
 *   HB_FUZZ_RUNS=100000 npx vitest run test/reliability/transport-fuzz.test.ts
 * (`node scripts/fuzz-transport.mjs [runs]` does the same); `HB_FUZZ_SEED` replays a failure.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, RpcError } from "../../src/protocol/errors.js";
import { ServerEndpoint } from "../../src/transport/server-endpoint.js";
import { BINARY, RawClient } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import {
  assertFrame,
  cut,
  cutsArb,
  deepLineArb,
  fuzzParams,
  fuzzRuns,
  keyOfFrame,
  lineArb,
  parseProtocolOutput,
  predict,
  type HandlerModel,
} from "./support/fuzz-frames.js";

const sorted = (keys: string[]) => [...keys].sort();

// ---------------------------------------------------------------------------
// 1. In process
// ---------------------------------------------------------------------------

const IN_PROCESS_MAX_LINE = 256;
/** Long enough for the deepest generated frame (20 000 levels of objects). */
const DEEP_MAX_LINE = 256 * 1024;
const IN_PROCESS_METHODS = ["echo", "later", "notify", "reject", "throw"];

/** What the in-process handlers answer (see `handler` below). */
const inProcessModel: HandlerModel = (method, params) => {
  if (method === "reject") return "err:-32050";
  if (method === "throw") return `err:${ErrorCode.InternalError}`;
  return `ok:${JSON.stringify({ method, params: params ?? null })}`;
};

async function runInProcess(bytes: Buffer, chunks: Buffer[], atEof: boolean, maxLineBytes = IN_PROCESS_MAX_LINE): Promise<void> {
  const prediction = predict(bytes, atEof, maxLineBytes, inProcessModel);
  const input = new PassThrough();
  const output = new PassThrough();
  const out: Buffer[] = [];
  output.on("data", (chunk: Buffer) => out.push(chunk));
  let ends = 0;
  const endpoint = new ServerEndpoint({ input, output, maxLineBytes, onInputEnd: () => ends++ });
  endpoint.onRequest((method, params, ctx) => {
    const result = { method, params: params ?? null };
    switch (method) {
      case "later":
        return new Promise((resolve) => setImmediate(() => resolve(result)));
      case "notify":
        return (async () => {
          await endpoint.notify("session.event" as never, { note: ctx.id, n: 1 } as never);
          void endpoint.notify("session.event" as never, { note: ctx.id, n: 2 } as never);
          return result;
        })();
      case "reject":
        return Promise.reject(new RpcError(-32050, "refused on purpose", { kind: "fuzz" }));
      case "throw":
        throw new Error("thrown on purpose");
      default:
        return result;
    }
  });
  endpoint.start();
  for (const chunk of chunks) input.write(chunk);
  if (atEof) input.end();
  const responsesOf = () => parseProtocolOutput(Buffer.concat(out)).filter((f) => !("method" in f));
  const deadline = Date.now() + 10_000;
  while (responsesOf().length < prediction.responses.length && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  // Give stray extra answers a chance to show up before counting.
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  const frames = parseProtocolOutput(Buffer.concat(out));
  const responses = frames.filter((f) => !("method" in f));
  expect(sorted(responses.map(keyOfFrame))).toEqual(sorted(prediction.responses));
  expect(responses.filter((f) => f.id === null).map((f) => f.error.code)).toEqual(prediction.nullErrors);
  // A handler's notifications precede its response.
  const responded = new Map<string, number>();
  frames.forEach((f, i) => {
    if (!("method" in f)) responded.set(JSON.stringify(f.id), Math.max(responded.get(JSON.stringify(f.id)) ?? -1, i));
  });
  frames.forEach((f, i) => {
    if ("method" in f && f.params.n === 1) {
      const answeredAt = responded.get(JSON.stringify(f.params.note));
      expect(answeredAt === undefined || answeredAt > i).toBe(true);
    }
  });
  expect(ends).toBe(atEof ? 1 : 0);
  endpoint.close();
  input.destroy();
  output.destroy();
}

describe("transport fuzz, in process", () => {
  const runs = fuzzRuns(400);
  it(`${runs} random streams: protocol frames only, each line answered exactly as the contract says`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineArb({ methods: IN_PROCESS_METHODS, maxLineBytes: IN_PROCESS_MAX_LINE }), { maxLength: 24 }),
        cutsArb,
        fc.boolean(),
        async (lines, cuts, lastWithoutNewline) => {
          let bytes = Buffer.concat(lines);
          // Sometimes the last line ends at EOF without its newline: it still counts.
          if (lastWithoutNewline && bytes.length > 0 && bytes[bytes.length - 1] === 0x0a) bytes = bytes.subarray(0, bytes.length - 1);
          await runInProcess(bytes, cut(bytes, cuts), true);
        },
      ),
      fuzzParams(runs),
    );
  }, Math.max(60_000, runs * 50));

  const deepRuns = fuzzRuns(100, 0.1);
  it(`${deepRuns} random streams with frames nested around the depth limit and far past it (long lines allowed)`, async () => {
    const options = { methods: IN_PROCESS_METHODS, maxLineBytes: DEEP_MAX_LINE };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(deepLineArb(options), deepLineArb(options), lineArb({ ...options, maxLineBytes: IN_PROCESS_MAX_LINE })), { maxLength: 12 }),
        cutsArb,
        async (lines, cuts) => {
          const bytes = Buffer.concat(lines);
          await runInProcess(bytes, cut(bytes, cuts), true, DEEP_MAX_LINE);
        },
      ),
      fuzzParams(deepRuns),
    );
  }, Math.max(60_000, deepRuns * 200));

  it("the same input without EOF: lines still being read are not answered, and onInputEnd is not called", async () => {
    const line = (id: number) => `${JSON.stringify({ jsonrpc: "2.0", id, method: "echo" })}\n`;
    // "{not json" glues onto line 2 (one parse error); request 3 has no newline yet.
    const bytes = Buffer.from(`${line(1)}{not json${line(2)}${line(3).trimEnd()}`);
    await runInProcess(bytes, cut(bytes, { offsets: [3, 40, 41, 100], stride: 0 }), false);
  });
});

describe("ids", () => {
  it("a number id a double cannot echo exactly (1e400, 2^64, 2^53+1) gets -32600 with id null, not a response under another id", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const out: Buffer[] = [];
    output.on("data", (chunk: Buffer) => out.push(chunk));
    const endpoint = new ServerEndpoint({ input, output });
    endpoint.onRequest(() => ({ ok: true }));
    endpoint.start();
    for (const id of ["1e400", "18446744073709551616", "9007199254740993", "-1e400"]) input.write(`{"jsonrpc":"2.0","id":${id},"method":"m"}\n`);
    input.write(`{"jsonrpc":"2.0","id":9007199254740991,"method":"m"}\n{"jsonrpc":"2.0","id":0.1,"method":"m"}\n{"jsonrpc":"2.0","id":1e300,"method":"m"}\n`);
    input.end();
    await new Promise((r) => setImmediate(r));
    await endpoint.flush();
    const frames = parseProtocolOutput(Buffer.concat(out));
    expect(frames.map((f) => [f.id, f.error?.code ?? "ok"])).toEqual([
      [null, -32600],
      [null, -32600],
      [null, -32600],
      [null, -32600],
      [null, -32600],
      [9007199254740991, "ok"],
      [0.1, "ok"],
    ]);
    expect(frames[0].error.message).toMatch(/echoed exactly/);
    endpoint.close();
  });
});

// ---------------------------------------------------------------------------
// 2. Through the binary
// ---------------------------------------------------------------------------

const BINARY_MAX_LINE = 1024;
const BINARY_METHODS = ["session/prompt", "session/cancel", "fuzz/echo", "tools/list", ""];

/** What the bridge answers before `initialize`: -32002 for session/*, -32601 for an unknown method. */
const binaryModel: HandlerModel = (method) => {
  if (method === "initialize" || method === "shutdown") return "skip";
  if (method === "session/prompt" || method === "session/cancel") return `err:${ErrorCode.NotInitialized}`;
  return `err:${ErrorCode.MethodNotFound}`;
};

class BridgeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly frames: any[] = [];
  stderr = "";
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private pending: Buffer[] = [];
  private wake: (() => void) | undefined;

  constructor(args: string[]) {
    this.child = spawn(BINARY, args, { stdio: "pipe" }) as ChildProcessWithoutNullStreams;
    this.child.stdin.on("error", () => undefined);
    this.child.stdout.on("data", (chunk: Buffer) => this.onStdout(chunk));
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    // "close", not "exit": stderr is read to the end before a test asserts on it.
    this.exit = new Promise((resolve) => this.child.on("close", (code, signal) => resolve({ code, signal })));
  }

  private onStdout(chunk: Buffer): void {
    this.pending.push(chunk);
    let data = Buffer.concat(this.pending);
    let nl: number;
    while ((nl = data.indexOf(0x0a)) !== -1) {
      const line = data.subarray(0, nl);
      data = data.subarray(nl + 1);
      const text = line.toString("utf8");
      if (!Buffer.from(text, "utf8").equals(line)) throw new Error(`invalid UTF-8 on stdout: ${line.toString("hex").slice(0, 200)}`);
      let frame: unknown;
      try {
        frame = JSON.parse(text);
      } catch {
        frame = { notProtocol: text };
      }
      this.frames.push(frame);
    }
    this.pending = data.length > 0 ? [Buffer.from(data)] : [];
    this.wake?.();
  }

  write(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.child.stdin.write(chunk, (error) => (error ? reject(error) : resolve())));
  }

  async waitFrames(n: number, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length < n) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`the bridge exited: ${this.stderr.slice(-2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${n} frames (have ${this.frames.length}); stderr: ${this.stderr.slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}

describe("transport fuzz, through the binary", () => {
  let bridge: BridgeProcess;
  let ws: TempWorkspace;
  beforeAll(() => {
    ws = tempWorkspace("hb-fuzz-");
    ws.file("README.md", "# fuzz\n");
    bridge = new BridgeProcess(["--stdio", "--no-session-log", "--max-line-bytes", String(BINARY_MAX_LINE)]);
  });
  afterAll(async () => {
    if (bridge.child.exitCode === null && bridge.child.signalCode === null) {
      bridge.child.kill("SIGKILL");
      await bridge.exit;
    }
    ws.cleanup();
  });

  const runs = fuzzRuns(150);
  it(`${runs} random streams to one bridge: protocol frames only, each line answered exactly once, and it keeps serving`, async () => {
    let seen = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineArb({ methods: BINARY_METHODS, maxLineBytes: BINARY_MAX_LINE }), { minLength: 1, maxLength: 24 }),
        cutsArb,
        async (lines, cuts) => {
          const bytes = Buffer.concat(lines);
          const prediction = predict(bytes, false, BINARY_MAX_LINE, binaryModel);
          fc.pre(prediction.predictable);
          for (const chunk of cut(bytes, cuts)) await bridge.write(chunk);
          const start = seen;
          await bridge.waitFrames(start + prediction.responses.length);
          const got = bridge.frames.slice(start, start + prediction.responses.length);
          seen = start + prediction.responses.length;
          for (const f of got) assertFrame(f);
          expect(sorted(got.map(keyOfFrame))).toEqual(sorted(prediction.responses));
          expect(got.filter((f) => f.id === null).map((f) => f.error.code)).toEqual(prediction.nullErrors);
        },
      ),
      fuzzParams(runs),
    );

    // Still serving: a real turn, then shutdown; nothing extra was ever written.
    const init = { jsonrpc: "2.0", id: "fuzz-init", method: "initialize", params: { cwd: ws.dir, provider: "scripted", model: "demo" } };
    const prompt = { jsonrpc: "2.0", id: "fuzz-prompt", method: "session/prompt", params: { sessionId: "after-fuzz", contentBlocks: [{ type: "text", text: "hi" }] } };
    await bridge.write(Buffer.from(`${JSON.stringify(init)}\n${JSON.stringify(prompt)}\n`));
    const findResponse = (id: string) => bridge.frames.find((f) => f.id === id && !("method" in f));
    const deadline = Date.now() + 15_000;
    while (!findResponse("fuzz-prompt") && Date.now() < deadline) await bridge.waitFrames(bridge.frames.length + 1);
    expect(findResponse("fuzz-init")?.result?.protocolVersion).toBe(1);
    expect(findResponse("fuzz-prompt")?.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    await bridge.write(Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id: "fuzz-bye", method: "shutdown" })}\n`));
    expect(await bridge.exit).toEqual({ code: 0, signal: null });
    for (const f of bridge.frames.slice(seen)) assertFrame(f);
    const after = bridge.frames.slice(seen).filter((f) => !("method" in f));
    expect(after.map((f) => f.id)).toEqual(["fuzz-init", "fuzz-prompt", "fuzz-bye"]);
    expect(bridge.stderr).toBe("");
  }, Math.max(120_000, runs * 100));
});

describe("transport fuzz, the first chunk on pipes", () => {
  // On pipes the bridge reads what waits in stdin and answers it before its streams exist
  // (src/transport/stdio.ts): random first chunks, each waiting before a fresh bridge reads, then EOF.
  const runs = fuzzRuns(30);
  it(`${runs} random first chunks, each to a fresh bridge on pipes: protocol frames only, each line answered exactly once`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(lineArb({ methods: BINARY_METHODS, maxLineBytes: BINARY_MAX_LINE }), { minLength: 1, maxLength: 24 }), async (lines) => {
        const bytes = Buffer.concat(lines);
        const prediction = predict(bytes, true, BINARY_MAX_LINE, binaryModel);
        fc.pre(prediction.predictable);
        const c = new RawClient({ pipes: true, args: ["--stdio", "--no-session-log", "--max-line-bytes", String(BINARY_MAX_LINE), "--log-level", "debug"] });
        try {
          void c.sendRaw(bytes);
          c.end();
          expect((await c.exit()).code).toBe(0);
          const raw = Buffer.from(c.lines.map((l) => `${l}\n`).join(""), "utf8");
          const responses = parseProtocolOutput(raw).filter((f) => !("method" in f));
          for (const f of responses) assertFrame(f);
          expect(sorted(responses.map(keyOfFrame))).toEqual(sorted(prediction.responses));
          expect(responses.filter((f) => f.id === null).map((f) => f.error.code)).toEqual(prediction.nullErrors);
          expect(c.badLines).toEqual([]);
          // Written right after the spawn, the chunk was waiting: read early, as a Python client's first request is.
          expect(c.stderr).toMatch(/stdio: \d+ bytes read and \d+ written before the streams were made/);
        } finally {
          await c.dispose();
        }
      }),
      fuzzParams(runs),
    );
  }, Math.max(120_000, runs * 2_000));
});
