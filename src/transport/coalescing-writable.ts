/**
 * A Writable in front of stdout that turns a burst of frames into one write.
 *
 * Why: a streamed turn emits one small frame (~230 bytes) per model chunk, and
 * `process.stdout.write` makes one `write(2)` per call when the pipe has room: 200 000 chunks,
 * 200 000 syscalls, a third of the bridge's CPU (bench/run.py, throughput), taken from a
 * 2-core machine the Python reader shares. Here a write is handed on at once when nothing is in
 * flight (a lone response costs no latency); frames written while one is in flight wait in
 * this stream's buffer, and node's Writable hands them all to `writev` when it completes, which
 * writes them as one buffer.
 *
 * Backpressure is unchanged for the producer: `write()` returns false once `highWaterMark`
 * bytes wait here, and `drain` follows when they are gone, so what the bridge holds stays
 * bounded by the two buffers (this one and the target's). Errors of the target (EPIPE) are
 * this stream's errors, and a closed target closes it.
 *
 * @module
 */
import { Writable } from "node:stream";

/** Default bytes waiting before `write()` asks the producer to wait: 64 KiB, a pipe's buffer on Linux. */
export const DEFAULT_COALESCE_BYTES = 64 * 1024;

export function coalescingWritable(target: Writable, highWaterMark = DEFAULT_COALESCE_BYTES): Writable {
  const stream = new Writable({
    highWaterMark,
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      target.write(chunk, (error) => callback(error ?? null));
    },
    writev(chunks, callback) {
      const parts = chunks.map(({ chunk }) => chunk as string | Buffer);
      const joined = parts.every((p) => typeof p === "string") ? (parts as string[]).join("") : Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
      target.write(joined, (error) => callback(error ?? null));
    },
    final(callback) {
      callback();
    },
  });
  target.on("error", (error) => stream.destroy(error));
  target.on("close", () => stream.destroy());
  return stream;
}
