// The floor of the round-trip benchmark: the least a Node process can do per request over
// NDJSON on stdio (parse the line, write a response line). bench/sections/roundtrip.py drives
// it with the same raw Python reader/writer as the other floors.
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { status: "ok", reason: { kind: "completed" } } })}\n`);
});
