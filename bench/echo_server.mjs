// The floor of the round-trip benchmark: the least a Node process can do per request over
// NDJSON on stdio (parse the line, write a response line). bench/sections/roundtrip.py drives
// it with the same raw Python reader/writer as the other floors.
//
// `--append-fsync FILE`: before each response, one line appended to FILE and fsynced, as a
// durable turn's least file work (bench/sections/peers.py: the floor of the logged round trip
// across two processes, where the client sleeps through the fsync).
import * as fs from "node:fs";
import { createInterface } from "node:readline";

const at = process.argv.indexOf("--append-fsync");
const log = at === -1 ? undefined : fs.openSync(process.argv[at + 1], "a", 0o600);
const entry = '{"type":"turn/end","seq":7,"time":1790000000000,"data":{"turn":1,"reason":{"kind":"completed"},"usage":{}}}\n';

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  if (log !== undefined) {
    fs.writeSync(log, entry);
    fs.fsyncSync(log);
  }
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { status: "ok", reason: { kind: "completed" } } })}\n`);
});
