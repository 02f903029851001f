/**
 * Real MCP servers for the MCP tests, as `initialize.mcpServers` entries: the reference servers
 * from npm (server-everything, server-filesystem) and a probe written with the official `mcp`
 * Python package (test/fixtures/mcp_probe_server.py), plus helpers to watch processes.
 */
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

/** Resolves once something accepts connections on 127.0.0.1:`port`. */
export async function listening(port: number, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
