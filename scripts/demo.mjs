#!/usr/bin/env node
// A raw JSON-RPC client of bin/harness-bridge: runs one turn of the offline demo model in a
// scratch workspace and prints each notification as it arrives, then the prompt's response.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "harness-demo-"));
fs.copyFileSync(path.join(root, "README.md"), path.join(workspace, "README.md"));

const bridge = spawn(path.join(root, "bin", "harness-bridge"), ["--stdio", "--no-session-log"], { stdio: ["pipe", "pipe", "inherit"] });
const send = (id, method, params) => bridge.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
const out = (s) => process.stdout.write(s);
let streaming = false;

readline.createInterface({ input: bridge.stdout }).on("line", (line) => {
  const frame = JSON.parse(line);
  if (frame.method === "session.event") {
    const { type, seq, data } = frame.params.event;
    if (type === "assistant/chunk") {
      if (!streaming) out(`  [${seq}] assistant/chunk ▸ `);
      streaming = true;
      out(data.chunk.text ?? data.chunk.argumentsDelta ?? "");
      return;
    }
    if (streaming) out("\n");
    streaming = false;
    const detail =
      type === "tool/result" ? `${data.name} → ${JSON.stringify(data.content[0]?.text ?? "").slice(0, 70)}…` :
      type === "assistant/message" ? `finishReason=${data.finishReason}, ${data.content.map((b) => b.type).join(" + ")}` :
      type === "turn/end" ? JSON.stringify(data.reason) : JSON.stringify(data).slice(0, 80);
    out(`  [${seq}] ${type}: ${detail}\n`);
  } else if (frame.method) {
    out(`  ${frame.method}: ${JSON.stringify(frame.params).slice(0, 100)}\n`);
  } else if (frame.id === 1) {
    out(`initialize → ${JSON.stringify(frame.result ?? frame.error)}\n`);
    send(2, "session/prompt", { sessionId: "demo", contentBlocks: [{ type: "text", text: "Show me what you can do." }] });
  } else if (frame.id === 2) {
    out(`session/prompt → ${JSON.stringify(frame.result ?? frame.error)}\n`);
    send(3, "shutdown", {});
  } else if (frame.id === 3) {
    out(`shutdown → ${JSON.stringify(frame.result)}\n`);
  }
});
bridge.on("exit", (code) => {
  fs.rmSync(workspace, { recursive: true, force: true });
  out(`harness-bridge exited with ${code}\n`);
  process.exitCode = code ?? 1;
});
send(1, "initialize", { cwd: workspace, provider: "scripted", model: "demo" });
