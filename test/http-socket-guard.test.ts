/**
 * http-socket-guard.ts: an exception thrown by a socket listener of an HTTP connection (as
 * undici's parser assertion of nodejs/undici#5360 was) fails that connection's request and is
 * reported, instead of escaping as an uncaught exception that ends the process. Checked for
 * both undici copies the bridge uses: the bundled one (providers) and Node's own, behind the
 * global fetch (MCP's HTTP transport). Without the guard each case is an uncaught exception,
 * which fails this file.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, expect, it } from "vitest";
import { guardHttpSockets } from "../src/http-socket-guard.js";

const reports: { error: Error; event: string }[] = [];
let server: net.Server;
let url: string;

beforeAll(async () => {
  guardHttpSockets((error, event) => reports.push({ error, event }));
  // Headers and the first bytes of a 100-byte body at once, more 200 ms later, the rest 400 ms
  // later: the connection is mid-body when the listener throws, at the second piece.
  server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    socket.once("data", () => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n" + "a".repeat(10));
      setTimeout(() => socket.write("b".repeat(45)), 200).unref();
      setTimeout(() => socket.end("c".repeat(45)), 400).unref();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Makes the next socket undici connects throw from its listener of `event` once the headers are in. */
function explodeNextSocket(event: string, armed: { on: boolean }): () => void {
  const onConnected = (message: unknown) => {
    const socket = (message as { socket: net.Socket }).socket;
    socket.on(event, () => {
      if (armed.on) {
        armed.on = false;
        throw new Error(`a listener of '${event}' threw`);
      }
    });
  };
  subscribe("undici:client:connected", onConnected);
  return () => unsubscribe("undici:client:connected", onConnected);
}

for (const [name, doFetch] of [
  ["the bundled undici", (u: string) => undiciFetch(u)],
  ["Node's own undici (global fetch)", (u: string) => fetch(u)],
] as const) {
  it(`${name}: a listener's exception fails the request, is reported, and the process goes on`, async () => {
    reports.length = 0;
    const armed = { on: false };
    const stop = explodeNextSocket("readable", armed);
    try {
      const response = await doFetch(url);
      expect(response.status).toBe(200);
      armed.on = true;
      const body = (response as Response).text();
      await expect(body).rejects.toThrow();
      expect(reports.map((r) => r.event)).toContain("readable");
      expect(reports[0].error.message).toBe("a listener of 'readable' threw");
    } finally {
      stop();
    }
  });
}
