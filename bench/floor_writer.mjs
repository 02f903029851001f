// The floor of the throughput benchmark: a Node process writing the same NDJSON lines the
// bridge writes for a streamed turn (session.event / assistant/chunk, one JSON.stringify per
// line), in 64 KiB writes, honouring backpressure, with nothing else to do: what a Python
// reader gets at best from a Node writer. It answers `initialize` and `session/prompt` like the
// bridge, so bench/sections/throughput.py reads it with the same raw reader.
//   node bench/floor_writer.mjs --chunks N [--text 0123456789abcdef]
import { createInterface } from "node:readline";
import { once } from "node:events";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const chunks = Number(arg("--chunks", "200000"));
const text = arg("--text", "0123456789abcdef");
const out = process.stdout;
const respond = (id, result) => out.write(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);

const BLOCK = 64 * 1024;

async function stream(sessionId, id) {
  let block = "";
  for (let seq = 0; seq < chunks; seq++) {
    const event = { type: "assistant/chunk", seq, time: Date.now(), data: { turn: 1, step: 1, chunk: { type: "text-delta", text } } };
    block += `${JSON.stringify({ jsonrpc: "2.0", method: "session.event", params: { sessionId, event } })}\n`;
    if (block.length >= BLOCK) {
      const accepted = out.write(block);
      block = "";
      if (!accepted) await once(out, "drain");
    }
  }
  out.write(block);
  respond(id, { status: "ok", reason: { kind: "completed" } });
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const { id, method, params } = JSON.parse(line);
  if (method === "initialize") respond(id, { serverInfo: { name: "harness-bridge", version: "floor" }, protocolVersion: 1, providers: ["scripted"] });
  else if (method === "session/prompt") await stream(params.sessionId, id);
  else if (method === "shutdown") {
    respond(id, {});
    break;
  }
}
