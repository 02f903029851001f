/**
 * The stdout coalescer: a burst of frames becomes few writes, in order, with backpressure and
 * errors passed through.
 */
import fc from "fast-check";
import { once } from "node:events";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CoalescingWritable, coalescingWritable } from "../../src/transport/coalescing-writable.js";

/** A target with room: each write is taken at once, like a pipe the reader keeps empty. */
function target() {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push(chunk.toString());
      cb();
    },
  });
  return { stream, writes };
}

describe("coalescingWritable", () => {
  it("writes a tick's frames together, in order, once its chain of promise reactions has run dry (a prompt's frames and its response)", async () => {
    const t = target();
    const out = coalescingWritable(t.stream);
    out.write("user\n");
    await Promise.resolve();
    out.write("turn\n");
    await Promise.resolve().then(() => out.write("end\n"));
    expect(t.writes).toHaveLength(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.writes).toEqual(["user\nturn\nend\n"]);
  });

  it("writes them together too when the first frame comes from a callback's own code, before its promise reactions (a prompt started by the input's data event)", async () => {
    const t = target();
    const out = coalescingWritable(t.stream);
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        out.write("user\n");
        void Promise.resolve()
          .then(() => out.write("turn\n"))
          .then(() => out.write("end\n"));
        resolve();
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.writes).toEqual(["user\nturn\nend\n"]);
  });

  it("turns a burst into one write by the end of the tick", async () => {
    const t = target();
    const out = coalescingWritable(t.stream);
    for (let i = 0; i < 1000; i++) out.write(`${i}\n`);
    expect(t.writes).toHaveLength(0);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(t.writes).toEqual([Array.from({ length: 1000 }, (_, i) => `${i}\n`).join("")]);
  });

  it("writes a batch at its size limit without waiting for the tick to end", () => {
    const t = target();
    const out = new CoalescingWritable(t.stream, 100);
    for (let i = 0; i < 10; i++) out.write("x".repeat(30));
    expect(t.writes.map((w) => w.length)).toEqual([120, 120]);
  });

  it("writes a chunk of at least the batch size as it is, after what was collected before it", async () => {
    const chunks: Buffer[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb();
      },
    });
    const out = new CoalescingWritable(stream, 100);
    const big = Buffer.from("b".repeat(150));
    out.write("a1");
    out.write("a2");
    out.write(big);
    out.write("c");
    await new Promise((resolve) => process.nextTick(resolve));
    expect(chunks.map((c) => c.toString())).toEqual(["a1a2", "b".repeat(150), "c"]);
    // The very Buffer, not a copy joined into a batch (a 15 MB message would be held twice).
    expect(chunks[1]).toBe(big);
  });

  it("end() writes what is still collected", async () => {
    const t = target();
    const out = new CoalescingWritable(t.stream, 1000);
    out.write("a");
    out.write("b");
    await new Promise<void>((resolve) => out.end(resolve));
    expect(t.writes.join("")).toBe("ab");
  });

  it("asks the producer to wait while the target is over its mark, and drains", async () => {
    const slow = new Writable({
      highWaterMark: 100,
      write(_chunk, _enc, cb) {
        setTimeout(cb, 5);
      },
    });
    const out = new CoalescingWritable(slow, 100);
    let accepted = true;
    let written = 0;
    while (accepted) {
      accepted = out.write("x".repeat(30));
      written++;
    }
    expect(written).toBeLessThanOrEqual(4);
    await once(out, "drain");
    expect(out.write("y")).toBe(true);
  });

  it("counts what it collected and what the target holds in writableLength (the input flow control reads it)", async () => {
    const stuck = new Writable({ highWaterMark: 50, write() {} }); // never calls back: a client that does not read
    const out = new CoalescingWritable(stuck, 1000);
    out.write("x".repeat(40));
    out.write("y".repeat(30));
    expect(out.writableLength).toBe(70); // collected, not yet handed on
    expect(out.writableNeedDrain).toBe(false);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(out.writableLength).toBe(70); // handed on, stuck in the target
    expect(out.writableNeedDrain).toBe(true);
  });

  it("calls write callbacks only once the target took the data", async () => {
    let release: (() => void) | undefined;
    const slow = new Writable({
      write(_chunk, _enc, cb) {
        release = cb;
      },
    });
    const out = coalescingWritable(slow);
    let done = false;
    out.write("a\n", () => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(false);
    release?.();
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(true);
  });

  it("passes the target's errors on (EPIPE), and closes with it", async () => {
    const broken = new Writable({
      write(_chunk, _enc, cb) {
        cb(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
    });
    broken.on("error", () => {});
    const out = coalescingWritable(broken);
    const failed = once(out, "error");
    out.write("a\n");
    const [error] = (await failed) as [NodeJS.ErrnoException];
    expect(error.code).toBe("EPIPE");
    if (!out.closed) await once(out, "close");
    expect(out.destroyed).toBe(true);
  });
});

describe("coalescingWritable, a target that closes without an error", () => {
  it("is a broken output (EPIPE): the error is passed on, and what was collected is given up with its callbacks called", async () => {
    const t = target();
    const out = coalescingWritable(t.stream);
    const errors: NodeJS.ErrnoException[] = [];
    out.on("error", (error) => errors.push(error));
    const callbacks: Array<Error | null | undefined> = [];
    out.write("a\n", (error) => callbacks.push(error));
    out.write("b\n", (error) => callbacks.push(error));
    const closed = new Promise((resolve) => out.on("close", resolve));
    t.stream.destroy(); // no error: the reader went without a failed write to say so
    await closed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors.map((e) => e.code)).toEqual(["EPIPE"]);
    expect(callbacks).toHaveLength(2);
    for (const error of callbacks) expect(error).toBeInstanceOf(Error);
    expect(t.writes).toEqual([]);
  });
});

describe("coalescingWritable, writes from every kind of callback", () => {
  type Source = "sync" | "reaction" | "tick" | "immediate" | "timer";
  const later = (source: Source, depth: number, run: () => void): void => {
    if (source === "sync") run();
    else if (source === "reaction") {
      let p = Promise.resolve();
      for (let i = 0; i < depth; i++) p = p.then(() => undefined);
      void p.then(run);
    } else if (source === "tick") process.nextTick(run);
    else if (source === "immediate") setImmediate(run);
    else setTimeout(run, 0);
  };
  const op = fc.record({
    source: fc.constantFrom<Source>("sync", "reaction", "reaction", "tick", "immediate", "timer"),
    depth: fc.nat(4),
    size: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 90, max: 250 })),
    withCallback: fc.boolean(),
  });

  it("hands every frame on once, in the order written, and calls each callback once after its bytes were taken", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), fc.boolean(), async (ops, slowTarget) => {
        let taken = "";
        const target = new Writable({
          highWaterMark: 64,
          write(chunk: Buffer, _enc, cb) {
            taken += chunk.toString();
            if (slowTarget) setImmediate(cb);
            else cb();
          },
        });
        const out = new CoalescingWritable(target, 100);
        let written = "";
        const calls = new Map<number, number>();
        let pending = ops.length;
        let allDone!: () => void;
        const done = new Promise<void>((resolve) => (allDone = resolve));
        ops.forEach(({ source, depth, size, withCallback }, n) =>
          later(source, depth, () => {
            const frame = `${String(n % 10).repeat(size - 1)}\n`;
            written += frame;
            const upTo = written.length;
            const settle = () => {
              if (--pending === 0) allDone();
            };
            if (!withCallback) {
              out.write(frame);
              settle();
              return;
            }
            calls.set(n, 0);
            out.write(frame, (error) => {
              expect(error ?? null).toBeNull();
              calls.set(n, calls.get(n)! + 1);
              // Called once the target has taken this frame's bytes (and all before them).
              expect(taken.length).toBeGreaterThanOrEqual(upTo);
              settle();
            });
          }),
        );
        await done;
        // Until the target has taken everything (a slow one takes a write per turn of the loop).
        while (out.writableLength > 0) await new Promise((resolve) => setImmediate(resolve));
        expect(taken).toBe(written);
        for (const count of calls.values()) expect(count).toBe(1);
      }),
      { numRuns: 300 },
    );
  });
});
