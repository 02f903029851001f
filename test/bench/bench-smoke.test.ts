/**
 * The benchmarks cannot rot: `bench/run.py --quick` (tiny counts, measures nothing) runs every
 * section end to end, and the MCP peer server answers a tool call. The real run is
 * `bash bench/run.sh`, never part of the test suite.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { BINARY } from "../support/raw-client.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
// The test venv (scripts/setup.sh); bench/run.sh's own venv adds only `mcp`.
const python = path.join(root, ".venv", "bin", "python");

describe("bench", () => {
  it.skipIf(!fs.existsSync(python))(
    "run.py --quick runs every section and writes the results",
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-bench-smoke-"));
      try {
        const out = path.join(dir, "results.md");
        // ~35 s on an idle 2-core machine, over 110 s on a busy one: the bound is a hang guard.
        const run = spawnSync(python, [path.join(root, "bench", "run.py"), "--quick", "--out", out], { cwd: root, encoding: "utf8", timeout: 400_000 });
        expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
        for (const section of ["Cold start", "First model request", "Event throughput", "Prompt round trip", "Round trip against the protocol SDKs", "Memory under a slow reader", "Size", "Durable log cost", "Bridge death", "Resume: spawn", "session/list over", "Client tool round trip", "Checkpoints: a bash turn"]) {
          expect(run.stdout).toContain(section);
        }
        // Quick mode measures nothing, so it judges nothing: every goal row says so, none says
        // "met" or "NOT met" (on the terminal or in the file).
        const goalRows = run.stdout.split("== Goals\n")[1].split("\n\n")[0].split("\n");
        expect(goalRows.length).toBeGreaterThan(5);
        for (const row of goalRows) expect(row).toMatch(/\s{2}not judged \(--quick\)$/);
        expect(run.stdout).not.toMatch(/\b(NOT met|met)\s*$/m);
        const results = fs.readFileSync(out, "utf8");
        expect(results).toContain("## Goals");
        expect(results).toMatch(/\| cold start: bin within 1\.15x of node -e 0 .* \| not judged \(--quick\) \|/);
        expect(results).not.toMatch(/\| (NOT met|met|n\/a) \|$/m);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    420_000,
  );

  /** A peer server of the bench on stdio, and a request function that resolves with its answer (the other lines in `seen`). */
  function peer(script: string) {
    const server = spawn(process.execPath, [path.join(root, "bench", script)], { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: server.stdout! });
    const seen: Record<string, unknown>[] = [];
    const responses = new Map<number, Record<string, unknown>>();
    const waiting = new Map<number, () => void>();
    lines.on("line", (line) => {
      const msg = JSON.parse(line);
      if (typeof msg.id === "number") {
        responses.set(msg.id, msg);
        waiting.get(msg.id)?.();
      } else seen.push(msg);
    });
    const request = (id: number, method: string, params: object) => {
      server.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
      return new Promise<Record<string, unknown>>((resolve) => {
        if (responses.has(id)) resolve(responses.get(id)!);
        else waiting.set(id, () => resolve(responses.get(id)!));
      });
    };
    return { server, request, seen };
  }

  it.skipIf(!fs.existsSync(python))(
    "stream_counts.py counts one short turn of the floor and of the bridge",
    () => {
      const run = spawnSync(python, [path.join(root, "bench", "stream_counts.py"), "--chunks", "300", "--rounds", "1"], { cwd: root, encoding: "utf8", timeout: 120_000 });
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toContain("| floor | bridge |");
      for (const row of ["lines/s", "writer write(2)", "reader read(2)", "reader blocked ms"]) expect(run.stdout).toContain(`| ${row} |`);
    },
    130_000,
  );

  it("the throughput floor writes the lines the bridge writes for a streamed turn (ids and times aside)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-bench-floor-"));
    try {
      const model = path.join(dir, "bench.json");
      fs.writeFileSync(model, JSON.stringify({ steps: [{ text: "0123456789abcdef", chunkSize: 16, repeat: 3 }] }));
      const input = [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { cwd: dir, provider: "scripted", model } },
        { jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "bench", contentBlocks: [{ type: "text", text: "go" }] } },
      ]
        .map((m) => `${JSON.stringify(m)}\n`)
        .join("");
      const stream = (cmd: string, args: string[]) => {
        const run = spawnSync(cmd, args, { input, encoding: "utf8", timeout: 60_000 });
        const lines = run.stdout.trim().split("\n").slice(1); // after initialize's answer
        return lines.map((l) => l.replace(/"time":\d+/g, '"time":0').replace(/msg_[0-9a-f-]{36}/g, "msg_ID"));
      };
      const bridge = stream(BINARY, ["--stdio", "--no-session-log"]);
      expect(bridge).toHaveLength(9);
      expect(stream(process.execPath, [path.join(root, "bench", "floor_writer.mjs"), "--chunks", "3"])).toEqual(bridge);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the MCP peer server answers a tool call", async () => {
    const { server, request } = peer("mcp_server.mjs");
    try {
      await request(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "smoke", version: "0" } });
      server.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
      const call = await request(2, "tools/call", { name: "echo", arguments: { text: "hi" } });
      expect(call.result).toMatchObject({ content: [{ type: "text", text: "hi" }] });
    } finally {
      server.kill();
    }
  });

  it("the ACP peer agent answers a prompt after streaming one session/update", async () => {
    const { server, request, seen } = peer("acp_agent.mjs");
    try {
      expect((await request(1, "initialize", { protocolVersion: 1, clientCapabilities: {} })).result).toMatchObject({ protocolVersion: 1 });
      const session = (await request(2, "session/new", { cwd: root, mcpServers: [] })).result as { sessionId: string };
      const prompt = await request(3, "session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: "hi" }] });
      expect(prompt.result).toEqual({ stopReason: "end_turn" });
      expect(seen).toEqual([
        { jsonrpc: "2.0", method: "session/update", params: { sessionId: session.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } } },
      ]);
    } finally {
      server.kill();
    }
  });
});
