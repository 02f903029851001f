// The floor of the throughput benchmark: a Node process writing the same NDJSON lines the
// bridge writes for a streamed turn (session.event: user/message, turn/start, step/start, the
// assistant/chunks, the assistant/message holding the whole text, turn/end; one JSON.stringify
// per line), in 64 KiB writes, honouring backpressure, with nothing else to do: what a Python
// reader gets at best from a Node writer. It answers `initialize` and `session/prompt` like the
// bridge, so bench/sections/throughput.py reads it with the same raw reader.
//   node bench/floor_writer.mjs --chunks N [--text 0123456789abcdef]
import { createInterface } from "node:readline";
import { once } from "node:events";
import { randomUUID } from "node:crypto";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const chunks = Number(arg("--chunks", "200000"));
const text = arg("--text", "0123456789abcdef");
const out = process.stdout;
const respond = (id, result) => out.write(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);

const BLOCK = 64 * 1024;

async function stream(sessionId, id, prompt) {
  let block = "";
  let seq = 0;
  const line = (type, data) => `${JSON.stringify({ jsonrpc: "2.0", method: "session.event", params: { sessionId, event: { type, seq: ++seq, time: Date.now(), data } } })}\n`;
  const usage = { inputTokens: 1, outputTokens: 4 * chunks };
  block += line("user/message", { id: `msg_${randomUUID()}`, content: prompt });
  block += line("turn/start", { turn: 1 });
  block += line("step/start", { turn: 1, step: 1 });
  for (let i = 0; i < chunks; i++) {
    block += line("assistant/chunk", { turn: 1, step: 1, chunk: { type: "text-delta", text } });
    if (block.length >= BLOCK) {
      const accepted = out.write(block);
      block = "";
      if (!accepted) await once(out, "drain");
    }
  }
  const content = [{ type: "text", text: text.repeat(chunks) }];
  block += line("assistant/message", { id: `msg_${randomUUID()}`, turn: 1, step: 1, content, finishReason: "stop", usage });
  block += line("turn/end", { turn: 1, reason: { kind: "completed" }, usage });
  out.write(block);
  respond(id, { status: "ok", reason: { kind: "completed" } });
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const { id, method, params } = JSON.parse(line);
  if (method === "initialize") respond(id, { serverInfo: { name: "harness-bridge", version: "floor" }, protocolVersion: 1, providers: ["scripted"] });
  else if (method === "session/prompt") await stream(params.sessionId, id, params.contentBlocks);
  else if (method === "shutdown") {
    respond(id, {});
    break;
  }
}
