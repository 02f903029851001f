/**
 * No error of the HTTP layer escapes as an uncaught exception. undici's HTTP/1 parser runs
 * inside the socket's event listeners (`readable`, `end`, `close`): an exception thrown there
 * (a parser assertion, as in nodejs/undici#5360, where a provider's FIN reaching a parser paused
 * by backpressure killed the process) is thrown out of the socket's `emit`, past every promise,
 * and ends the process with every session in it.
 *
 * The bundled undici (8.x, the providers' `fetch`) has that bug fixed; Node's own copy (the
 * global `fetch`, which MCP's HTTP transport uses: undici 7.30 in Node 24.22) does not, and the
 * next such bug may be anywhere. So, as a last resort, every socket an undici client connects
 * (direct, to a proxy, or tunnelled through one: each is announced on the
 * `undici:client:connected` diagnostics channel, by the bundled undici and by Node's alike) has
 * its `emit` wrapped: an exception thrown by one of its listeners is reported and becomes
 * `socket.destroy(error)`. undici's own error handling then fails the request that socket
 * carried: a provider attempt fails with that error (retried, or the turn ends `model-error`),
 * an MCP call fails, and the bridge keeps serving. When the socket was already destroyed (a
 * throw from `close`), nothing more can be failed through it: the attempt's idle watchdog
 * (providers/openai-compatible/watchdog.ts) ends it.
 *
 * Both bundles (the main one and the MCP chunk) may carry a copy of this module: the marks are
 * global symbols, so a socket is wrapped once and the channel subscribed once per process.
 *
 * @module
 */
import { subscribe } from "node:diagnostics_channel";
import type { EventEmitter } from "node:events";

/** What a guarded socket needs: an emitter that can be destroyed with an error. */
export type GuardableSocket = EventEmitter & { destroy(error?: Error): unknown };

const GUARDED = Symbol.for("harness-bridge.http-socket-guard");
const INSTALLED = Symbol.for("harness-bridge.http-socket-guard.installed");

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
      try {
        report(error, String(event));
      } catch {
        /* a failing report must not undo the guard */
      }
      // Not from inside the listener loop that threw: the other listeners of this event have
      // been skipped already, and undici's 'error' / 'close' listeners must run on a socket
      // whose state is no longer changing under them.
      process.nextTick(() => socket.destroy(error));
      return true;
    }
  };
}

/**
 * Guards every socket undici connects from now on, in this process (once; later calls do
 * nothing, so the first caller's `report` is the one used).
 */
export function guardHttpSockets(report: ListenerFailure): void {
  const global = globalThis as { [INSTALLED]?: true };
  if (global[INSTALLED]) return;
  global[INSTALLED] = true;
  subscribe("undici:client:connected", (message) => {
    const socket = (message as { socket?: GuardableSocket }).socket;
    if (socket && typeof socket.emit === "function") guardSocket(socket, report);
  });
}
