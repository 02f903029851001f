/**
 * Real MCP servers for the MCP tests, as `initialize.mcpServers` entries: the reference servers
 * from npm (server-everything, server-filesystem) and a probe written with the official `mcp`
 * Python package (test/fixtures/mcp_probe_server.py), plus helpers to watch processes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { ROOT } from "./raw-client.js";

const modules = path.join(ROOT, "node_modules", "@modelcontextprotocol");
export const EVERYTHING = path.join(modules, "server-everything", "dist", "index.js");
export const FILESYSTEM = path.join(modules, "server-filesystem", "dist", "index.js");
export const PROBE = path.join(ROOT, "test", "fixtures", "mcp_probe_server.py");
/** The Python with the `mcp` package: the repository's venv (scripts/setup.sh installs the SDK's test extra there). */
export const PYTHON = path.join(ROOT, ".venv", "bin", "python");

export const everything = (extra: object = {}) => ({ command: process.execPath, args: [EVERYTHING], ...extra });
export const filesystem = (dir: string) => ({ command: process.execPath, args: [FILESYSTEM, dir] });
/** The probe over stdio, logging to `log`. */
export const probe = (log: string, extra: object = {}) => ({ command: PYTHON, args: [PROBE], env: { PROBE_LOG: log }, ...extra });

/** Whether a process exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Resolves once `pid` is gone (zombies count as gone: their state is Z); rejects after `ms`. */
export async function gone(pid: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  const zombie = () => {
    try {
      return /^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return true;
    }
  };
  while (alive(pid) && !zombie()) {
    if (Date.now() > until) throw new Error(`process ${pid} is still alive after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves with the probe log's lines once `times` of them match `pattern`. */
export async function logged(log: string, pattern: RegExp, times = 1, ms = 15_000): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const lines = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n") : [];
    if (lines.filter((l) => pattern.test(l)).length >= times) return lines;
    if (Date.now() > until) throw new Error(`the probe did not log ${pattern} within ${ms} ms (log: ${lines.join(" | ")})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A free TCP port on 127.0.0.1 (closed again, for a server to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * server-everything speaking streamable HTTP on a port of its own: a port found free can be
 * taken by another process before the server binds it, so the server's own "listening" line
 * decides, and a refused bind is retried on another port.
 */
export async function everythingOverHttp(tries = 5): Promise<{ server: ChildProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const server = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
    const up = await new Promise<boolean>((resolve) => {
      let seen = "";
      server.stderr!.setEncoding("utf8").on("data", (d: string) => {
        seen += d;
        if (seen.includes(`listening on port ${port}`)) resolve(true);
      });
      server.once("exit", () => resolve(false));
    });
    if (up) return { server, port };
    server.kill("SIGKILL");
    if (attempt >= tries) throw new Error(`server-everything could not bind a port in ${tries} tries`);
  }
}

/**
 * A port on 127.0.0.1 that is held for the test and closes every connection at once: a server
 * that is there and answers nothing, which no other process can take meanwhile.
 */
export async function deadPort(): Promise<{ port: number; close: () => void }> {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}
