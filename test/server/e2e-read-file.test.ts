/**
 * read_file on binary content through the built binary: a file without a NUL byte whose first
 * block is not UTF-8 (random bytes, as a compressed file holds) answers the model with a short
 * note (size, "binary"), an error result the turn goes on from, not mojibake.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-e2e-read-");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

it("read_file of random bytes without NULs answers a note, and the turn goes on", async () => {
  let seed = 11;
  const noise = Buffer.alloc(50_000).map(() => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return 1 + (seed % 255);
  });
  fs.writeFileSync(path.join(ws.dir, "archive.gz"), noise);
  ws.file("notes.txt", "plain text\n");
  const script = ws.script(
    "read.json",
    oneTurn({ toolCalls: [{ name: "read_file", arguments: { path: "archive.gz" } }, { name: "read_file", arguments: { path: "notes.txt" } }] }, { text: "done" }),
  );
  const c = new RawClient();
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, script));
  expect((await c.response("init")).error).toBeUndefined();
  c.request("p", "session/prompt", promptParams("read"));
  expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
  const results = c
    .events("read")
    .filter((e) => e.type === "tool/result")
    .map((e) => ({ isError: e.data.isError, text: e.data.content.map((b: { text: string }) => b.text).join("") }));
  expect(results).toEqual([
    { isError: true, text: "archive.gz is a binary file (50000 bytes; bytes that are not UTF-8 in its first 8192); read_file shows UTF-8 text files only" },
    { isError: false, text: "1\tplain text" },
  ]);
});
