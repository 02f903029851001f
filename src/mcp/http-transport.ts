/**
 * MCP's streamable HTTP transport (the SDK's), with every response body capped.
 *
 * Why the cap: the SDK reads a JSON response whole and buffers an SSE event until its end, so a
 * hostile or broken server could make the bridge hold any amount of memory. Each response body
 * (a POST's answer, or one SSE stream) errors once it passed `MAX_RESPONSE_BYTES`; the call it
 * carried fails with that error, the bridge goes on.
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { guardHttpSockets } from "../http-socket-guard.js";
import type { Logger } from "../log.js";
import type { McpHttpServerConfig } from "../protocol/mcp-types.js";

/** Most bytes one response body may carry. */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** `fetch` whose response bodies error past `limit` bytes. */
export function cappedFetch(limit = MAX_RESPONSE_BYTES): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > limit) controller.error(new Error(`the MCP server's response passed ${limit} bytes; it was cut off`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

export function httpTransport(config: McpHttpServerConfig, logger?: Logger): StreamableHTTPClientTransport {
  // The global fetch is Node's own undici, whose HTTP/1 parser can still throw from a socket
  // handler (nodejs/undici#5360): such a throw fails the call, never the bridge (http-socket-guard.ts).
  guardHttpSockets((error, event) => logger?.warn(`an HTTP connection failed in its '${event}' handler and was closed, failing its request: ${error.stack ?? error.message}`));
  return new StreamableHTTPClientTransport(new URL(config.url), {
    fetch: cappedFetch(),
    requestInit: config.headers ? { headers: config.headers } : undefined,
    // A lost SSE stream is retried a couple of times, not forever: a dead server becomes tool errors.
    reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 10_000, reconnectionDelayGrowFactor: 2, maxRetries: 2 },
  });
}
