/**
 * A client that dies without closing anything politely (SIGKILL) must not leave the bridge or
 * its tool processes running: the bridge notices its parent is gone, aborts every turn (killing
 * the tools), syncs the logs and exits — during a bash command, and during a model stream that
 * only sends SSE keep-alive comments (where no write would ever fail). Through the binary, with
 * a real intermediate client process that the test SIGKILLs.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { fakeDeepSeekEnv } from "../support/fake-deepseek.js";
import { BINARY } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { killLeftovers, marker, pidsWith, waitFor } from "./support/procs.js";

/**
 * The client: spawns the bridge with pipes, sends `lines`, keeps reading its stdout (a live
 * reader, as the SDK is), and prints the bridge's pid.
 */
const CLIENT = `
const { spawn } = require("node:child_process");
const [bin, root, lines] = process.argv.slice(1);
const bridge = spawn(bin, ["--stdio", "--session-root", root], { stdio: ["pipe", "pipe", "inherit"] });
bridge.stdout.on("data", () => {});
for (const line of JSON.parse(lines)) bridge.stdin.write(JSON.stringify(line) + "\\n");
process.stdout.write(String(bridge.pid) + "\\n");
setInterval(() => {}, 1000);
`;

let ws: TempWorkspace;
let root: string;
const marks: string[] = [];
const clients: ChildProcess[] = [];
const servers: http.Server[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-client-gone-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-client-gone-root-"));
});

afterEach(() => {
  for (const c of clients.splice(0)) c.kill("SIGKILL");
  for (const m of marks.splice(0)) killLeftovers(m);
  for (const s of servers.splice(0)) s.close();
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

/** Starts the client with `lines` and `env`; resolves with the bridge's pid. */
async function startClient(lines: object[], env: NodeJS.ProcessEnv = process.env): Promise<{ client: ChildProcess; bridgePid: number }> {
  const client = spawn(process.execPath, ["-e", CLIENT, BINARY, root, JSON.stringify(lines)], { env, stdio: ["ignore", "pipe", "pipe"] });
  clients.push(client);
  const bridgePid = await new Promise<number>((resolve, reject) => {
    let out = "";
    client.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    client.on("exit", () => reject(new Error("the client exited early")));
  });
  return { client, bridgePid };
}

const request = (id: number, method: string, params: object) => ({ jsonrpc: "2.0", id, method, params });

/** The durable events of a session, as the log on disk holds them. */
function loggedTypes(sessionId: string): string[] {
  const file = path.join(root, workspaceFolderName(ws.dir), `${sessionId}.jsonl`);
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l).type);
}

describe("a client that vanishes", () => {
  it("SIGKILLed during a bash command: the bridge and the command are gone, the log holds the aborted turn", async () => {
    const m = marker();
    marks.push(m);
    const script = ws.script("sleep.json", turns([{ toolCalls: [{ id: "s", name: "bash", arguments: { command: `sleep 300; : ${m}` } }] }, { text: "never" }]));
    const { client, bridgePid } = await startClient([
      request(1, "initialize", { cwd: ws.dir, provider: "scripted", model: script, permissionMode: "full" }),
      request(2, "session/prompt", { sessionId: "gone", contentBlocks: [{ type: "text", text: "sleep" }] }),
    ]);
    expect(await waitFor(() => pidsWith(m).length > 0, 10_000)).toBe(true);
    client.kill("SIGKILL");
    expect(await waitFor(() => !alive(bridgePid) && pidsWith(m).length === 0, 10_000)).toBe(true);
    const types = loggedTypes("gone");
    expect(types.at(-1)).toBe("turn/end");
    expect(types).toContain("tool/result");
  });

  it("SIGKILLed during a bash command (full mode) whose descendant left its group and ignores SIGTERM: that one is gone too", async () => {
    const m = marker();
    marks.push(m);
    const command = `setsid bash -c 'trap "" TERM; while :; do sleep 0.2; done' ${m} & sleep 300`;
    const script = ws.script("stray.json", turns([{ toolCalls: [{ id: "s", name: "bash", arguments: { command } }] }, { text: "never" }]));
    const { client, bridgePid } = await startClient([
      request(1, "initialize", { cwd: ws.dir, provider: "scripted", model: script, permissionMode: "full" }),
      request(2, "session/prompt", { sessionId: "stray", contentBlocks: [{ type: "text", text: "stray" }] }),
    ]);
    expect(await waitFor(() => pidsWith(m).length > 0, 10_000)).toBe(true);
    client.kill("SIGKILL");
    expect(await waitFor(() => !alive(bridgePid) && pidsWith(m).length === 0, 10_000)).toBe(true);
  });

  it("SIGKILLed while the model stream sends only keep-alive comments: the bridge exits", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const timer = setInterval(() => res.write(": keep-alive\n\n"), 100);
      res.on("close", () => clearInterval(timer));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    let requests = 0;
    server.on("request", () => requests++);
    const { client, bridgePid } = await startClient(
      [
        request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat" }),
        request(2, "session/prompt", { sessionId: "ka", contentBlocks: [{ type: "text", text: "hi" }] }),
      ],
      fakeDeepSeekEnv(`http://127.0.0.1:${port}`),
    );
    expect(await waitFor(() => requests > 0, 10_000)).toBe(true);
    client.kill("SIGKILL");
    expect(await waitFor(() => !alive(bridgePid), 10_000)).toBe(true);
    expect(loggedTypes("ka").at(-1)).toBe("turn/end");
  });
});
