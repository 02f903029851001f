/**
 * No error of the HTTP layer escapes as an uncaught exception. undici's HTTP/1 parser runs
 * inside the socket's event listeners (`readable`, `end`, `close`): an exception thrown there
 * (a parser assertion, as in nodejs/undici#5360, where a provider's FIN reaching a parser paused
 * by backpressure killed the process) is thrown out of the socket's `emit`, past every promise,
 * and ends the process with every session in it.
 *
 * So every socket an undici client connects (direct, to a proxy, or tunnelled through one: each
 * is announced on the `undici:client:connected` diagnostics channel, Node's built-in fetch
 * included) has its `emit` wrapped: an exception thrown by one of its listeners is reported and
 * becomes `socket.destroy(error)`. undici's own error handling then fails the request that socket
 * carried, the attempt fails with that error, and the turn ends `model-error` (or is retried)
 * while the bridge keeps serving. When the socket was already destroyed (a throw from `close`),
 * nothing more can be failed through it: the attempt's idle watchdog (watchdog.ts) ends it.
 *
 * @module
 */
import { subscribe } from "node:diagnostics_channel";
import type { EventEmitter } from "node:events";

/** What a guarded socket needs: an emitter that can be destroyed with an error. */
export type GuardableSocket = EventEmitter & { destroy(error?: Error): unknown };

const GUARDED = Symbol("harness-bridge.socket-guard");

/** Called with what a socket listener threw, and the event it was handling. */
export type ListenerFailure = (error: Error, event: string) => void;

/** Wraps `socket.emit` so that a listener's exception destroys the socket instead of the process. Idempotent. */
export function guardSocket(socket: GuardableSocket, report: ListenerFailure): void {
  const marked = socket as GuardableSocket & { [GUARDED]?: true };
  if (marked[GUARDED]) return;
  marked[GUARDED] = true;
  const emit = socket.emit;
  socket.emit = function guardedEmit(this: GuardableSocket, event: string | symbol, ...args: unknown[]): boolean {
    try {
      return emit.call(this, event, ...args);
    } catch (thrown) {
      const error = thrown instanceof Error ? thrown : new Error(String(thrown));
      report(error, String(event));
      // Not from inside the listener loop that threw: the other listeners of this event have
      // been skipped already, and undici's 'error' / 'close' listeners must run on a socket
      // whose state is no longer changing under them.
      process.nextTick(() => socket.destroy(error));
      return true;
    }
  };
}

let installed = false;

/**
 * Guards every socket undici connects from now on, in this process (once; later calls do
 * nothing, so the first caller's `report` is the one used).
 */
export function guardHttpSockets(report: ListenerFailure): void {
  if (installed) return;
  installed = true;
  subscribe("undici:client:connected", (message) => {
    const socket = (message as { socket?: GuardableSocket }).socket;
    if (socket && typeof socket.emit === "function") guardSocket(socket, report);
  });
}
