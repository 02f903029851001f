// What the bridge holds after N MCP calls it gave up on (toolTimeoutMs) against a streamable
// HTTP server that never answers them: the bridge's descriptors and sockets, the connections
// still open at the server, the bridge's CPU and RSS.
// Usage: node bench/mcp_given_up.mjs [binary] [calls] [mode: json|sse|answered]
// (json: the server holds back the headers; sse: it opens an SSE stream and writes nothing;
// answered: it answers each call at once, for the CPU of the calls that were not given up on)
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";

const binary = process.argv[2] ?? "bin/harness-bridge";
const calls = Number(process.argv[3] ?? 200);
const mode = process.argv[4] ?? "json";

let open = 0;
const srv = http.createServer((req, res) => {
  if (req.method !== "POST") return void res.writeHead(405).end();
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const m = JSON.parse(body);
    if (m.id === undefined || m.method === undefined) return void res.writeHead(202).end();
    const json = (result) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }));
    if (m.method === "initialize") return json({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "n", version: "1" } });
    if (m.method === "tools/list") return json({ tools: [{ name: "hang", inputSchema: { type: "object" } }] });
    if (mode === "answered") return json({ content: [{ type: "text", text: "ran" }] });
    open++;
    res.on("close", () => open--);
    if (mode === "sse") res.writeHead(200, { "content-type": "text/event-stream" }).flushHeaders();
  });
});
await new Promise((r) => srv.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${srv.address().port}/mcp`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-mcp-given-up-bench-"));
const script = { turns: [{ steps: [{ toolCalls: Array.from({ length: calls }, (_, i) => ({ id: `c${i}`, name: "mcp__n__hang", arguments: {} })) }, { text: "done" }] }] };
fs.writeFileSync(path.join(dir, "s.json"), JSON.stringify(script));

const child = spawn(binary, ["--stdio", "--no-session-log"], { stdio: ["pipe", "pipe", "ignore"] });
const waiting = new Map();
let buffered = "";
child.stdout.setEncoding("utf8").on("data", (d) => {
  buffered += d;
  for (let nl; (nl = buffered.indexOf("\n")) !== -1; ) {
    const frame = JSON.parse(buffered.slice(0, nl));
    buffered = buffered.slice(nl + 1);
    if (frame.id !== undefined && waiting.has(frame.id)) waiting.get(frame.id)(frame);
  }
});
const request = (id, method, params) =>
  new Promise((resolve) => {
    waiting.set(id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });

const stat = () => {
  const fields = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
  const tick = 100;
  const fds = fs.readdirSync(`/proc/${child.pid}/fd`).map((fd) => {
    try {
      return fs.readlinkSync(`/proc/${child.pid}/fd/${fd}`);
    } catch {
      return "";
    }
  });
  const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]);
  return { cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / tick, fds: fds.length, sockets: fds.filter((l) => l.startsWith("socket:")).length, rssMB: Math.round(rss / 1024) };
};

const init = await request("init", "initialize", { cwd: dir, provider: "scripted", model: "s.json", mcpServers: { n: { url, toolTimeoutMs: 50 } } });
if (init.error) throw new Error(JSON.stringify(init.error));
const before = stat();
const prompt = await request("p", "session/prompt", { sessionId: "s", contentBlocks: [{ type: "text", text: "go" }] });
await new Promise((r) => setTimeout(r, 1000));
const after = stat();
console.log(JSON.stringify({ binary, calls, mode, status: prompt.result?.status, before, after, openAtServer: open }));
await request("x", "shutdown", {});
child.stdin.end();
await new Promise((r) => child.once("exit", r));
srv.closeAllConnections();
srv.close();
fs.rmSync(dir, { recursive: true, force: true });
