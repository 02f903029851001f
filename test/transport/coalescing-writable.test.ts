/**
 * The stdout coalescer: a burst of frames becomes few writes, in order, with backpressure and
 * errors passed through.
 */
import { once } from "node:events";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { coalescingWritable } from "../../src/transport/coalescing-writable.js";

/** A target that completes each write on the next turn of the event loop, like a pipe. */
function target(onWrite?: (chunk: string) => void) {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push(chunk.toString());
      onWrite?.(chunk.toString());
      setImmediate(cb);
    },
  });
  return { stream, writes };
}

describe("coalescingWritable", () => {
  it("hands a lone write on at once", () => {
    const t = target();
    coalescingWritable(t.stream).write("one\n");
    expect(t.writes).toEqual(["one\n"]);
  });

  it("turns a burst into few writes, in order", async () => {
    const t = target();
    const out = coalescingWritable(t.stream);
    for (let i = 0; i < 1000; i++) out.write(`${i}\n`);
    await new Promise<void>((resolve) => out.end(resolve));
    expect(t.writes.join("")).toBe(Array.from({ length: 1000 }, (_, i) => `${i}\n`).join(""));
    expect(t.writes.length).toBeLessThanOrEqual(3);
  });

  it("asks the producer to wait past its high-water mark, and drains", async () => {
    const t = target();
    const out = coalescingWritable(t.stream, 100);
    let accepted = true;
    let written = 0;
    while (accepted) {
      accepted = out.write("x".repeat(30));
      written++;
    }
    expect(written).toBeLessThanOrEqual(5);
    await once(out, "drain");
    expect(t.writes.join("").length).toBe(written * 30);
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
