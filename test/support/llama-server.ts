/**
 * A real model for end-to-end tests: llama-cpp-python's OpenAI-compatible server
 * (`python -m llama_cpp.server`) running the Gemma 3 270M GGUF that scripts/setup-real-model.sh
 * installs into `.venv-llama`, and {@link startRecordingReverseProxy}, a pass-through HTTP proxy
 * in front of it that records every request body and the status of every answer (the bridge
 * cannot tell us what the server said; the proxy can).
 *
 * Everything listens on 127.0.0.1 only; every process and socket is released by `stop()`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { ROOT } from "./raw-client.js";

export const LLAMA_VENV = path.join(ROOT, ".venv-llama");
export const LLAMA_PYTHON = path.join(LLAMA_VENV, "bin", "python");
export const MODEL_FILE = path.join(LLAMA_VENV, "model", "gemma-3-270m-q4_k_m.gguf");

/** True when the real-model test must run, not skip: in CI, or when asked for by name. */
export function realModelRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.CI !== undefined && env.CI !== "" && env.CI !== "false") || env.HARNESS_REQUIRE_REAL_MODEL === "1";
}

/** Why the real model cannot run here (what is missing and how to install it), or undefined. */
export function realModelMissing(): string | undefined {
  const fix = "run `bash scripts/setup.sh` (it calls scripts/setup-real-model.sh; SETUP_REAL_MODEL=0 skips it)";
  if (!fs.existsSync(LLAMA_PYTHON)) return `${LLAMA_PYTHON} is missing: ${fix}`;
  // existsSync follows the symlink into the cache: a dangling link counts as missing.
  if (!fs.existsSync(MODEL_FILE)) return `${MODEL_FILE} is missing: ${fix}`;
  return undefined;
}

/** A port that was free a moment ago on 127.0.0.1 (the server needs a number up front). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface LlamaServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Everything the server printed (stdout and stderr), for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts the server and waits until `GET /v1/models` answers 200 (the model is loaded).
 * `args` are passed on after `--model`, `--host` and `--port`.
 */
export async function startLlamaServer(args: string[], readyWithinMs = 120_000, attempts = 3): Promise<LlamaServer> {
  // The port is found free, then released for the server to bind: another process can take it
  // in between (the server then exits, address in use), and a new port is tried.
  const port = await freePort();
  const started = Date.now();
  const child: ChildProcess = spawn(LLAMA_PYTHON, ["-m", "llama_cpp.server", "--model", MODEL_FILE, "--host", "127.0.0.1", "--port", String(port), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so that stop() also ends anything it started.
    detached: true,
  });
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => (output += s));
  child.stderr?.setEncoding("utf8").on("data", (s: string) => (output += s));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async () => {
    if (gone) return;
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {
      return;
    }
    const killer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
    }, 5_000);
    await exited;
    clearTimeout(killer);
  };

  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const deadline = Date.now() + readyWithinMs;
  for (;;) {
    if (gone) {
      await Promise.race([closed, new Promise((r) => setTimeout(r, 5_000))]); // its last output
      if (attempts > 1 && /address already in use/i.test(output)) return startLlamaServer(args, readyWithinMs - (Date.now() - started), attempts - 1);
      throw new Error(`llama_cpp.server exited before it was ready:\n${output}`);
    }
    const status = await fetch(`${baseUrl}/models`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`llama_cpp.server was not ready within ${readyWithinMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { baseUrl, output: () => output, stop };
}

/** One request that went through the proxy, and what the server answered. */
export interface Exchange {
  method: string;
  url: string;
  /** The parsed JSON request body (undefined when it was not JSON). */
  body: any;
  /** The upstream status; 0 until the headers arrived (or when the upstream failed). */
  status: number;
  /** The answer's body as text (for failure messages and stream checks). */
  response: string;
  /** Resolves when the answer has been passed on in full (or failed). */
  done: Promise<void>;
}

export interface RecordingReverseProxy {
  /** The proxy's `/v1` base URL, to use in place of the server's. */
  baseUrl: string;
  exchanges: Exchange[];
  stop(): Promise<void>;
}

/**
 * A pass-through proxy to `upstream` (an `http://host:port/v1` base URL). `rewrite` may change
 * each JSON request body before it is forwarded; the recorded body is what the bridge sent.
 */
export async function startRecordingReverseProxy(upstream: string, rewrite: (body: any) => any = (b) => b): Promise<RecordingReverseProxy> {
  const target = new URL(upstream);
  const exchanges: Exchange[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const forwarded = body === undefined ? raw : JSON.stringify(rewrite(structuredClone(body)));
      let finish!: () => void;
      const exchange: Exchange = { method: req.method ?? "", url: req.url ?? "", body, status: 0, response: "", done: new Promise((r) => (finish = r)) };
      exchanges.push(exchange);
      const headers = { ...req.headers, host: target.host, "content-length": String(Buffer.byteLength(forwarded)) };
      const upstreamReq = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (upstreamRes) => {
        exchange.status = upstreamRes.statusCode ?? 0;
        res.writeHead(exchange.status, upstreamRes.headers);
        upstreamRes.setEncoding("utf8");
        upstreamRes.on("data", (s: string) => {
          exchange.response += s;
          res.write(s);
        });
        upstreamRes.on("end", () => {
          res.end();
          finish();
        });
        upstreamRes.on("error", () => {
          res.destroy();
          finish();
        });
      });
      upstreamReq.on("error", (err) => {
        exchange.response += `proxy: upstream failed: ${err.message}`;
        res.destroy();
        finish();
      });
      // The bridge went away (cancel, timeout): so does the upstream request.
      res.on("close", () => upstreamReq.destroy());
      upstreamReq.end(forwarded);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}${target.pathname.replace(/\/$/, "")}`,
    exchanges,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
