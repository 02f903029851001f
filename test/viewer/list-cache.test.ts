/**
 * The viewer's list cache (log-reader.ts `ListCache`): it holds the logs of the last listing
 * only, so a viewer left running does not grow with every session ever made, and it remembers a
 * file that holds no session yet, so an unchanged one is not read again at every poll.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { listSessions, type ListCache } from "../../src/viewer/log-reader.js";

let folder: string;
beforeEach(() => {
  folder = fs.mkdtempSync(path.join(os.tmpdir(), "hb-list-cache-"));
});
afterEach(() => fs.rmSync(folder, { recursive: true, force: true }));

const header = (id: string) => `${JSON.stringify({ type: "session-header", version: 1, sessionId: id, workspace: "/w", createdAt: 5, provider: "scripted", model: "demo" })}\n`;

it("forgets deleted logs, and keeps a file with no whole header line as no session", () => {
  const cache: ListCache = new Map();
  for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(folder, `s${i}.jsonl`), header(`s${i}`));
  fs.writeFileSync(path.join(folder, "torn.jsonl"), '{"type":"session-header","ver');
  expect(listSessions(folder, cache).sessions).toHaveLength(50);
  expect(cache.size).toBe(51);
  expect(cache.get(path.join(folder, "torn.jsonl"))).toMatchObject({ entry: undefined });
  for (let i = 0; i < 50; i++) fs.rmSync(path.join(folder, `s${i}.jsonl`));
  fs.writeFileSync(path.join(folder, "new.jsonl"), header("new"));
  expect(listSessions(folder, cache).sessions.map((s) => s.sessionId)).toEqual(["new"]);
  expect([...cache.keys()].map((f) => path.basename(f)).sort()).toEqual(["new.jsonl", "torn.jsonl"]);
});
