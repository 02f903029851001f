/**
 * The snapshot tests: the live binary's notification stream and prompt response for each
 * scripted scenario, normalized by snapshots/README.md's rules, must equal the files.
 * `UPDATE_SNAPSHOTS=1 npx vitest run test/snapshots.test.ts` rewrites them.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { normalizeStream } from "./support/snapshot-rules.js";
import { readScenario, runScenario, scenarioDirs, type ScenarioRun } from "./support/scenario.js";
import { useFakeDeepSeek } from "./support/use-fake-deepseek.js";

const UPDATE = process.env.UPDATE_SNAPSHOTS === "1";

function readJsonl(file: string): unknown[] {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

function check(dir: string, run: ScenarioRun): void {
  // One stream, notifications first and the response last, so ids number the same way in
  // both languages.
  const normalized = normalizeStream([...run.notifications, run.response], run);
  const normalizedNotifications = normalized.slice(0, -1);
  const normalizedResponse = normalized[normalized.length - 1];
  const notificationsFile = path.join(dir, "notifications.jsonl");
  const responseFile = path.join(dir, "response.json");
  if (UPDATE) {
    fs.writeFileSync(notificationsFile, normalizedNotifications.map((n) => JSON.stringify(n)).join("\n") + "\n");
    fs.writeFileSync(responseFile, `${JSON.stringify(normalizedResponse, null, 2)}\n`);
  }
  if (!fs.existsSync(notificationsFile)) throw new Error(`${notificationsFile} is missing: run with UPDATE_SNAPSHOTS=1, review and commit it`);
  expect(normalizedResponse).toEqual(JSON.parse(fs.readFileSync(responseFile, "utf8")));
  expect(normalizedNotifications).toEqual(readJsonl(notificationsFile));
}

describe.each(scenarioDirs("scripted").map((dir) => [path.basename(dir), dir]))("scripted/%s", (_name, dir) => {
  it("matches the pinned notification stream and prompt response", async () => {
    check(dir, await runScenario(dir, "scripted"));
  });
});

describe("deepseek scenarios over HTTP (fake DeepSeek server)", () => {
  const deepseek = useFakeDeepSeek();
  const server = deepseek.server;

  it.each(scenarioDirs("deepseek").map((dir) => [path.basename(dir), dir]))("deepseek/%s matches its snapshot", async (_name, dir) => {
    server.table = readScenario(dir).server ?? {};
    check(dir, await runScenario(dir, "deepseek", deepseek.env({ HARNESS_RETRY_BASE_MS: "10" })));
    expect(server.problems).toEqual([]);
  });
});
