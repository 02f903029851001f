/**
 * A hand-written streamable HTTP MCP server on 127.0.0.1, for what the reference servers never
 * do (withhold an answer, answer on another stream, flood, take nothing): each POST's JSON-RPC
 * message is handed to the test with its response, and the test answers (or does not) as the
 * case needs. A GET (the SDK's standalone SSE stream) is refused with 405 unless `onGet` takes it.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

/** What a POST carried: a request, a notification or an answer of the bridge's. */
export interface PostedMessage {
  id?: number | string;
  method?: string;
  params?: { name?: string; protocolVersion?: string };
}

export interface HandServer {
  /** The server's address, ending in `/`. */
  url: string;
  /** Ends every connection and stops listening. */
  close(): void;
}

export async function handMcpServer(
  onPost: (message: PostedMessage, res: http.ServerResponse) => void,
  onGet: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => void res.writeHead(405).end(),
): Promise<HandServer> {
  const srv = http.createServer((req, res) => {
    if (req.method === "GET") return onGet(req, res);
    if (req.method !== "POST") return void res.writeHead(405).end();
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => onPost(JSON.parse(body) as PostedMessage, res));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`,
    close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}

/** Answers request `id` (as the server chooses to spell it) with `result`, as a JSON response. */
export function answerJson(res: http.ServerResponse, id: unknown, result: unknown): void {
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id, result }));
}

/** The result of `initialize` for a server of tools, in the protocol version the client asked. */
export const initializeResult = (message: PostedMessage) => ({ protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "h", version: "1" } });

/** Takes a notification or an answer (202, no body). */
export const accepted = (res: http.ServerResponse): void => void res.writeHead(202).end();

/** Whether `message` is the bridge's request (not a notification, not an answer). */
export const isRequest = (message: PostedMessage): boolean => message.id !== undefined && message.method !== undefined;
