/**
 * The session viewer at the HTTP level (src/viewer/): who it answers, what it refuses, what it
 * reads and that it never writes, and that a damaged or huge log does not stop it. The page
 * itself, in a real browser, is python/sdk/tests/test_viewer_browser.py.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/log-format.js";
import { CONTENT_SECURITY_POLICY } from "../../src/viewer/http.js";
import { parseViewArgs, startViewer } from "../../src/viewer/index.js";
import { LINE_CAP, PAGE_EVENTS } from "../../src/viewer/log-reader.js";

let tmp: string;
let root: string;
let workspace: string;
let folder: string;
let server: http.Server;
let port: number;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request with the `Host` header as given (fetch would not let a test set it). */
function get(pathname: string, options: { host?: string | null; method?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (options.host !== null) headers.Host = options.host ?? `127.0.0.1:${port}`;
    const request = http.request({ host: "127.0.0.1", port, path: pathname, method: options.method ?? "GET", headers, setHost: false, agent: false }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

const header = (id: string) => JSON.stringify({ type: "session-header", version: 1, sessionId: id, workspace, createdAt: 1000, provider: "scripted", model: "demo" });
const event = (seq: number, type: string, data: unknown) => JSON.stringify({ type, seq, time: 1000 + seq, data });

function writeLog(id: string, lines: string[]): string {
  const file = path.join(folder, `${id}.jsonl`);
  fs.writeFileSync(file, lines.map((l) => `${l}\n`).join(""));
  return file;
}

/** Every file under the session root with its size and mtime: what "never writes" is checked against. */
function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(root, { recursive: true }) as string[]) {
    const stat = fs.lstatSync(path.join(root, name));
    out[name] = `${stat.size}:${stat.mtimeMs}`;
  }
  return out;
}

beforeEach(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-viewer-"));
  root = path.join(tmp, "root");
  workspace = path.join(tmp, "ws");
  fs.mkdirSync(workspace);
  folder = path.join(root, workspaceFolderName(workspace));
  fs.mkdirSync(folder, { recursive: true });
  server = await startViewer({ sessionRoot: root, workspace, port: 0 });
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("who the viewer answers", () => {
  it("listens on 127.0.0.1 only, and offers no option to listen elsewhere", () => {
    expect((server.address() as AddressInfo).address).toBe("127.0.0.1");
    for (const option of ["--host", "--bind", "--address"]) {
      expect(() => parseViewArgs([option, "0.0.0.0"])).toThrow(/Unknown option/);
    }
    expect(() => parseViewArgs(["--port", "70000"])).toThrow(/port number/);
    expect(parseViewArgs(["--port", "8123", "--workspace", "w", "--session-root", "r"], {}, "/x")).toEqual({ port: 8123, workspace: "/x/w", sessionRoot: "/x/r" });
  });

  it("refuses a session root or workspace Node read with U+FFFD (not valid UTF-8): it names another folder", () => {
    expect(() => parseViewArgs(["--session-root", "/r/\uFFFD"], {}, "/x")).toThrow(/--session-root.*not valid UTF-8/);
    expect(() => parseViewArgs(["--workspace", "/w/\uFFFD"], {}, "/x")).toThrow(/--workspace.*not valid UTF-8/);
    for (const name of ["HARNESS_SESSION_ROOT", "XDG_STATE_HOME", "HOME"]) {
      expect(() => parseViewArgs([], { HOME: "/home/u", [name]: "/s/\uFFFD" }, "/x")).toThrow(new RegExp(`${name}.*not valid UTF-8`));
    }
    // Given on the command line, the root makes the variables unused.
    expect(parseViewArgs(["--session-root", "r"], { HOME: "/h/\uFFFD" }, "/x")?.sessionRoot).toBe("/x/r");
  });

  it("serves the three loopback names of its own port, and refuses any other Host with 403 (DNS rebinding)", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      expect((await get("/api/sessions", { host })).status).toBe(200);
    }
    for (const host of ["evil.example", `evil.example:${port}`, `127.0.0.1:${port + 1}`, "127.0.0.1", `localhost.evil.example:${port}`, `127.0.0.2:${port}`]) {
      const answer = await get("/api/sessions", { host });
      expect(answer.status, host).toBe(403);
      expect(answer.body).not.toContain("sessions\":");
    }
    // No Host at all: Node itself refuses an HTTP/1.1 request without one (400).
    const bare = await get("/api/sessions", { host: null });
    expect([400, 403]).toContain(bare.status);
    expect(bare.body).not.toContain("sessions\":");
  });

  it("refuses a request that names another server besides a loopback Host: an absolute-form target, a second Host", async () => {
    /** The status line of a request written byte for byte (http.request normalizes both). */
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1", () => socket.end(text));
        let got = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => (got += chunk));
        socket.on("end", () => resolve(got.split("\r\n")[0]!));
        socket.on("error", reject);
      });
    const host = `127.0.0.1:${port}`;
    expect(await raw(`GET /api/sessions HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).toBe("HTTP/1.1 200 OK");
    for (const request of [
      `GET http://evil.example/api/sessions HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `GET http://${host}/api/sessions HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `GET /api/sessions HTTP/1.1\r\nHost: ${host}\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
      `GET /api/sessions HTTP/1.1\r\nHost: ${host}\r\nhost: ${host}\r\nConnection: close\r\n\r\n`,
      `GET //evil.example/api/sessions HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    ]) {
      expect(await raw(request), request).toMatch(/^HTTP\/1\.1 (400|403) /);
    }
  });

  it("is read-only: anything but GET and HEAD is 405", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) expect((await get("/api/sessions", { method })).status).toBe(405);
  });

  it("sends its strict Content-Security-Policy (and nosniff) with every answer", async () => {
    writeLog("s1", [header("s1")]);
    for (const pathname of ["/", "/viewer.js", "/viewer.css", "/api/sessions", "/api/sessions/s1/lines", "/api/sessions/nope/lines", "/missing"]) {
      const answer = await get(pathname);
      expect(answer.headers["content-security-policy"], pathname).toBe(CONTENT_SECURITY_POLICY);
      expect(answer.headers["x-content-type-options"]).toBe("nosniff");
    }
    const forbidden = await get("/", { host: "evil.example" });
    expect(forbidden.headers["content-security-policy"]).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toMatch(/default-src 'none'/);
    expect(CONTENT_SECURITY_POLICY).toMatch(/script-src 'self'(;|$)/);
    const page = await get("/");
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.body).toContain('<script src="/viewer.js"');
    // The page's script builds its DOM from text only.
    const code = (await get("/viewer.js")).body.replace(/^\s*\/\/.*$/gm, "");
    expect(code).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  });
});

describe("what it reads", () => {
  it("lists the workspace's sessions as session/list does, newest first, and never writes a log or a meta", async () => {
    writeLog("older", [header("older"), event(1, "user/message", { id: "m", content: [{ type: "text", text: "first  prompt" }] }), event(2, "turn/start", { turn: 1 })]);
    writeLog("newer", [header("newer"), event(1, "user/message", { id: "m", content: [{ type: "text", text: "second" }] }), event(5, "turn/end", { turn: 1, reason: { kind: "completed" } })]);
    fs.writeFileSync(path.join(folder, "older.meta.json"), "{stale"); // a damaged meta: the log is scanned, the meta left alone
    fs.mkdirSync(path.join(root, workspaceFolderName(path.join(tmp, "other"))));
    writeLog("..", []); // no session id: not listed
    const before = snapshot();
    const list = JSON.parse((await get("/api/sessions")).body);
    expect(list.workspace).toBe(workspace);
    expect(list.sessions.map((s: { sessionId: string; title: string; turns: number }) => [s.sessionId, s.title, s.turns])).toEqual([
      ["newer", "second", 0],
      ["older", "first prompt", 1],
    ]);
    await get("/api/sessions/older/lines?from=0");
    expect(snapshot()).toEqual(before);
    // A log that grows (a turn running elsewhere) is listed anew, not from what was seen before.
    fs.appendFileSync(path.join(folder, "older.jsonl"), `${event(3, "turn/start", { turn: 2 })}\n`);
    const again = JSON.parse((await get("/api/sessions")).body);
    expect(again.sessions.find((s: { sessionId: string }) => s.sessionId === "older").turns).toBe(2);
    expect(fs.readFileSync(path.join(folder, "older.meta.json"), "utf8")).toBe("{stale");
  });

  it("reads a session from its header on, then follows what is appended, from the cursor it gave", async () => {
    const file = writeLog("s1", [header("s1"), event(1, "user/message", { id: "m", content: [{ type: "text", text: "hi" }] })]);
    const first = JSON.parse((await get("/api/sessions/s1/lines?from=0")).body);
    expect(first.header.sessionId).toBe("s1");
    expect(first.events.map((e: { type: string }) => e.type)).toEqual(["user/message"]);
    expect(first.more).toBe(false);
    expect((await get(`/api/sessions/s1/lines?from=${first.next}`)).body).toBe(JSON.stringify({ events: [], next: first.next, more: false }));
    fs.appendFileSync(file, `${event(2, "turn/start", { turn: 1 })}\n${event(3, "hook/decision", { hook: "pre", decision: "allow" })}\n{"type":"torn`);
    const second = JSON.parse((await get(`/api/sessions/s1/lines?from=${first.next}`)).body);
    // A line without its newline is being written: not sent until it is whole.
    expect(second.events.map((e: { type: string }) => e.type)).toEqual(["turn/start", "hook/decision"]);
    expect(second.header).toBeUndefined();
  });

  it("pages a long log and refuses a cursor that is no line start (409: read again from 0)", async () => {
    const lines = [header("long")];
    for (let seq = 1; seq <= 450; seq++) lines.push(event(seq, "step/start", { turn: 1, step: seq }));
    writeLog("long", lines);
    const seqs: number[] = [];
    let from = 0;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(10);
      const page = JSON.parse((await get(`/api/sessions/long/lines?from=${from}`)).body);
      expect(page.events.length).toBeLessThanOrEqual(PAGE_EVENTS);
      seqs.push(...page.events.map((e: { seq: number }) => e.seq));
      from = page.next;
      if (!page.more) break;
    }
    expect(seqs).toEqual(Array.from({ length: 450 }, (_, i) => i + 1));
    expect((await get("/api/sessions/long/lines?from=5")).status).toBe(409);
    expect((await get(`/api/sessions/long/lines?from=${from + 1}`)).status).toBe(409);
    for (const bad of ["-1", "x", "1e3", "99999999999999999999"]) expect((await get(`/api/sessions/long/lines?from=${bad}`)).status).toBe(400);
  });

  it("refuses ids that are no session ids (traversal) and logs that are not regular files", async () => {
    fs.writeFileSync(path.join(tmp, "secret.jsonl"), `${header("secret")}\n`);
    fs.symlinkSync(path.join(tmp, "secret.jsonl"), path.join(folder, "link.jsonl"));
    for (const id of ["..%2F..%2Fsecret", "%2E%2E%2Fsecret", "a%2F..%2F..%2Fsecret", "a%00b", "%E0%A4%A", "a%5Cb", "x".repeat(300)]) {
      const answer = await get(`/api/sessions/${id}/lines`);
      expect(answer.status, id).toBe(400);
      expect(answer.body).not.toContain("session-header");
    }
    // Dot segments are resolved by the URL parser before routing: they name no session route.
    for (const id of ["..", "%2e%2e", "../../secret"]) {
      const answer = await get(`/api/sessions/${id}/lines`);
      expect(answer.status, id).toBe(404);
      expect(answer.body).not.toContain("session-header");
    }
    expect((await get("/api/sessions/link/lines")).status).toBe(404); // a symlink is no session
    expect(JSON.parse((await get("/api/sessions")).body).sessions).toEqual([]);
  });

  it("survives damaged lines: each becomes a note, the events around it still show, and the server goes on", async () => {
    const big = JSON.stringify({ type: "tool/result", seq: 4, time: 1, data: { callId: "c", name: "read_file", content: [{ type: "text", text: "x".repeat(LINE_CAP + 10) }], isError: false, durationMs: 1 } });
    writeLog("bad", [
      header("bad"),
      event(1, "user/message", { id: "m", content: [{ type: "text", text: "hi" }] }),
      "{not json",
      "[1,2,3]",
      "null",
      '{"type":5}',
      "\u0000\u00ff binary",
      big,
      event(5, "turn/end", { turn: 1, reason: { kind: "completed" } }),
    ]);
    const answer = await get("/api/sessions/bad/lines?from=0");
    expect(answer.status).toBe(200);
    const page = JSON.parse(answer.body);
    expect(page.events.map((e: { type: string }) => e.type)).toEqual([
      "user/message",
      "viewer/unparsable",
      "viewer/unparsable",
      "viewer/unparsable",
      "viewer/unparsable",
      "viewer/unparsable",
      "viewer/oversized",
      "turn/end",
    ]);
    expect(page.events[1].data.text).toBe("{not json");
    expect(page.events[6].data).toEqual({ type: "tool/result", seq: 4, time: 1, bytes: Buffer.byteLength(big) });
    expect(answer.body.length).toBeLessThan(10_000); // the huge line is named, not sent
    writeLog("nohead", ["garbage", event(1, "turn/start", { turn: 1 })]);
    const headless = JSON.parse((await get("/api/sessions/nohead/lines")).body);
    expect(headless.events.map((e: { type: string }) => e.type)).toEqual(["viewer/unparsable", "turn/start"]);
    // Listed or not, the list still answers, naming what it could not list.
    const list = JSON.parse((await get("/api/sessions")).body);
    expect(list.sessions.map((s: { sessionId: string }) => s.sessionId), list.problems.join("; ")).toContain("bad");
    expect(list.problems.join(" ")).toMatch(/nohead/);
    expect((await get("/")).status).toBe(200);
  });

  it("a line, header or meta nested thousands deep (past JSON.stringify's stack) is a note or left out, never a 500 of the page or the list", async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    writeLog("deep", [
      header("deep").replace(/}$/, `,"extra":${deep(20_000)}}`),
      event(1, "user/message", { id: "m", content: [{ type: "text", text: "hi" }] }),
      `{"type":"tool/result","seq":2,"time":1,"data":${deep(100_000)}}`,
      // Brackets inside strings are no nesting: this one is shown as it is.
      event(3, "assistant/message", { step: 1, content: [{ type: "text", text: "[".repeat(5000) + "\\\"{" }] }),
      event(4, "turn/end", { turn: 1, reason: { kind: "completed" } }),
    ]);
    for (const from of ["0", "tail"]) {
      const answer = await get(`/api/sessions/deep/lines?from=${from}`);
      expect(answer.status, answer.body.slice(0, 200)).toBe(200);
      const page = JSON.parse(answer.body);
      expect(page.events.map((e: { type: string }) => e.type)).toEqual(["viewer/unparsable", "user/message", "viewer/unparsable", "assistant/message", "turn/end"]);
      expect(page.events[2].data.why).toMatch(/nested deeper than/);
    }
    // A meta (and a header) holding such a value beside the fields a listing reads: the listing
    // takes the known fields only, each of its type.
    const plain = writeLog("plain", [header("plain").replace(/"createdAt":1000/, `"createdAt":${deep(6000)},"parentSessionId":${deep(6000)}`)]);
    const metaFor = writeLog("meta", [header("meta")]);
    const entry = { sessionId: "meta", title: "t", createdAt: 1, updatedAt: 2, turns: 0, parentSessionId: "p", origin: "fork" };
    fs.writeFileSync(metaFor.replace(/\.jsonl$/, ".meta.json"), `{"version":1,"logSize":${fs.statSync(metaFor).size},"entry":${JSON.stringify(entry).replace(/}$/, `,"x":${deep(6000)}}`)}}`);
    const list = await get("/api/sessions");
    expect(list.status, list.body.slice(0, 200)).toBe(200);
    const sessions = JSON.parse(list.body).sessions as Array<Record<string, unknown>>;
    expect(sessions.find((s) => s.sessionId === "meta")).toEqual(entry);
    expect(sessions.find((s) => s.sessionId === "plain")).toEqual({ sessionId: "plain", title: "", createdAt: 0, updatedAt: 0, turns: 0 });
    expect(fs.existsSync(plain)).toBe(true);
  });

  it("answers 404 for an unknown session and for a workspace with no sessions yet lists none", async () => {
    expect((await get("/api/sessions/none/lines")).status).toBe(404);
    fs.rmSync(folder, { recursive: true });
    expect(JSON.parse((await get("/api/sessions")).body)).toMatchObject({ sessions: [], problems: [] });
  });
});

describe("harness-bridge view (the binary)", () => {
  it("prints its URL alone on stdout, serves the page from inside the binary, and exits 0 on SIGTERM and SIGINT", async () => {
    const { spawn } = await import("node:child_process");
    const { BINARY } = await import("../support/raw-client.js");
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const child = spawn(BINARY, ["view", "--session-root", root, "--workspace", workspace], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      child.stdout.setEncoding("utf8");
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk: string) => {
          stdout += chunk;
          if (stdout.includes("\n")) resolve(stdout.trim());
        });
        child.on("exit", (code) => reject(new Error(`exited ${code} before printing its URL`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const page = await fetch(url);
      expect(page.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(await page.text()).toContain("/viewer.js");
      expect(await (await fetch(`${url}viewer.js`)).text()).toContain("createTextNode");
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (code, sig) => resolve([code, sig])));
      child.kill(signal);
      expect(await exited).toEqual([0, null]);
    }
  });

  it("exits 0 on a SIGTERM sent the moment its URL is read (its handlers are in place before it prints it)", async () => {
    const { spawn } = await import("node:child_process");
    const { BINARY } = await import("../support/raw-client.js");
    // The client's race: a test that skips at once and stops the viewer (python/sdk/tests/test_viewer_browser.py without a browser).
    for (let i = 0; i < 10; i++) {
      const child = spawn(BINARY, ["view", "--session-root", root, "--workspace", workspace], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"] });
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (code, sig) => resolve([code, sig])));
      await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
      child.kill("SIGTERM");
      expect(await exited).toEqual([0, null]);
    }
  });

  it("refuses a usage error with exit 2, and --stdio's bundle does not hold the viewer (it is a chunk of its own)", async () => {
    const { spawnSync } = await import("node:child_process");
    const { BINARY } = await import("../support/raw-client.js");
    const bad = spawnSync(BINARY, ["view", "--host", "0.0.0.0"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--host/);
    const build = path.join(path.dirname(path.dirname(BINARY)), "build");
    const main = fs.readFileSync(path.join(build, "harness-bridge.cjs"), "utf8");
    const chunk = fs.readFileSync(path.join(build, "viewer.cjs"), "utf8");
    for (const marker of ["viewer/unparsable", "frame-ancestors 'none'", "harness-bridge sessions"]) {
      expect(chunk).toContain(marker);
      expect(main).not.toContain(marker);
    }
  });
});

describe("a huge log", () => {
  it("opens at its tail: the header, the last few MiB of events, and how much was left out; then follows on", async () => {
    const { TAIL_BYTES } = await import("../../src/viewer/log-reader.js");
    const lines = [header("huge")];
    const filler = "y".repeat(1000);
    let bytes = 0;
    let seq = 0;
    while (bytes < TAIL_BYTES * 2) {
      const line = event(++seq, "tool/result", { callId: `c${seq}`, name: "bash", content: [{ type: "text", text: filler }], isError: false, durationMs: 1 });
      lines.push(line);
      bytes += line.length + 1;
    }
    const file = writeLog("huge", lines);
    const size = fs.statSync(file).size;
    const page = JSON.parse((await get("/api/sessions/huge/lines?from=tail")).body);
    expect(page.header.sessionId).toBe("huge");
    expect(page.skipped).toBeGreaterThan(TAIL_BYTES / 2);
    expect(page.skipped).toBeLessThanOrEqual(size - TAIL_BYTES + 2000);
    // It starts on a whole event, and from there on nothing is missing up to the end.
    const seqs: number[] = page.events.map((e: { seq: number }) => e.seq);
    let next = page.next;
    for (let more = page.more; more; ) {
      const p = JSON.parse((await get(`/api/sessions/huge/lines?from=${next}`)).body);
      seqs.push(...p.events.map((e: { seq: number }) => e.seq));
      next = p.next;
      more = p.more;
    }
    expect(seqs.at(-1)).toBe(seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0]! + i));
    expect(next).toBe(size);
    // A small log's tail is all of it.
    writeLog("small", [header("small"), event(1, "turn/start", { turn: 1 })]);
    const small = JSON.parse((await get("/api/sessions/small/lines?from=tail")).body);
    expect(small.skipped).toBeUndefined();
    expect(small.header.sessionId).toBe("small");
    expect(small.events.map((e: { type: string }) => e.type)).toEqual(["turn/start"]);
  });
});
