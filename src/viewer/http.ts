/**
 * The viewer's HTTP handler: the page's three assets and two read-only JSON routes.
 *
 *   GET /                                    the page (assets.ts)
 *   GET /viewer.js, /viewer.css              its script and style
 *   GET /api/sessions                        the workspace's sessions, as session/list lists them
 *   GET /api/sessions/<id>/lines?from=<n>    a page of the log from byte offset n (log-reader.ts),
 *                                 ?from=tail  or the header and the last few MiB of it
 *
 * Invariants, and why:
 * - Only a loopback `Host` is served (`127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`);
 *   anything else is 403. A page on another site could rebind its own name to 127.0.0.1 (DNS
 *   rebinding) and read the logs through the user's browser: its requests carry its own name.
 * - Every answer carries a strict Content-Security-Policy: the page may run only its own
 *   script, and nothing from a log can become script even if some rendering path were wrong.
 * - GET and HEAD only: the viewer changes nothing.
 * - A session id from the path is decoded and checked against the protocol's pattern before
 *   it is used (no "/", "..", NUL): no path traversal.
 * - A handler never throws out: a failure is a 500 answer, and the server goes on.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ASSETS } from "./assets.js";
import { isSessionId } from "../agent/store/log-format.js";
import { listSessions, readPage, type ListCache } from "./log-reader.js";

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Headers on every answer. */
const COMMON_HEADERS: Record<string, string> = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
};

export interface ViewerContext {
  /** The workspace's folder under the session root (where its logs are). */
  directory: string;
  workspace: string;
  sessionRoot: string;
  /** The port the server listens on: the only one a `Host` may name. */
  port(): number;
}

/** Whether `host` (a `Host` header) names this server by a loopback name. */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

export function viewerHandler(context: ViewerContext): (request: IncomingMessage, response: ServerResponse) => void {
  const cache: ListCache = new Map();
  return (request, response) => {
    try {
      route(context, cache, request, response);
    } catch (error) {
      send(response, 500, "application/json", JSON.stringify({ error: (error as Error).message }));
    }
  };
}

/**
 * The one `Host` of a request in origin form (`/path`), or undefined. Node keeps the first of
 * several `Host` fields and ignores an absolute-form target's authority (`GET http://x/`), which
 * HTTP says takes the place of `Host`: a request carrying another name there, or a second `Host`,
 * names more than this server, and is refused with the rest.
 */
function requestHost(request: IncomingMessage): string | undefined {
  if (!request.url?.startsWith("/") || request.url.startsWith("//")) return undefined;
  let hosts = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i]!.toLowerCase() === "host") hosts++;
  return hosts === 1 ? request.headers.host : undefined;
}

function route(context: ViewerContext, cache: ListCache, request: IncomingMessage, response: ServerResponse): void {
  if (!isLoopbackHost(requestHost(request), context.port())) return send(response, 403, "text/plain", "forbidden: this viewer answers to 127.0.0.1, localhost or [::1] only\n");
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("Allow", "GET, HEAD");
    return send(response, 405, "text/plain", "the viewer is read-only\n");
  }
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  const asset = ASSETS[url.pathname];
  if (asset) return send(response, 200, asset.type, asset.body);
  if (url.pathname === "/api/sessions") {
    const { sessions, problems } = listSessions(context.directory, cache);
    return json(response, 200, { workspace: context.workspace, sessionRoot: context.sessionRoot, sessions, problems });
  }
  const match = /^\/api\/sessions\/([^/]+)\/lines$/.exec(url.pathname);
  if (match) {
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
    } catch {
      return json(response, 400, { error: "not a session id" });
    }
    if (!isSessionId(id)) return json(response, 400, { error: "not a session id" });
    const rawFrom = url.searchParams.get("from") ?? "0";
    if (rawFrom !== "tail" && !/^\d{1,15}$/.test(rawFrom)) return json(response, 400, { error: "from must be a byte offset or tail" });
    const page = readPage(context.directory, id, rawFrom === "tail" ? "tail" : Number(rawFrom));
    if (page === "unknown-session") return json(response, 404, { error: "no such session" });
    if (page === "bad-cursor") return json(response, 409, { error: "the log changed under this cursor: read it again from 0" });
    return json(response, 200, page);
  }
  send(response, 404, "text/plain", "not found\n");
}

function json(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, "application/json; charset=utf-8", JSON.stringify(value));
}

function send(response: ServerResponse, status: number, type: string, body: string): void {
  if (response.headersSent) return void response.end();
  response.writeHead(status, { ...COMMON_HEADERS, "Content-Type": type, "Content-Length": Buffer.byteLength(body) });
  response.end(response.req.method === "HEAD" ? undefined : body);
}
