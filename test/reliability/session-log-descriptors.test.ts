/**
 * Through the binary, under open-file limits from too few for Node to start up to enough: a
 * bridge that answered `initialize` but has no descriptor left to open a session's log with
 * answers the prompt `-32001` `out-of-descriptors` at once, naming the limit — nothing else runs
 * that could free one, so there is nothing to wait for (src/agent/turn-admission.ts) — and exits
 * cleanly when its stdin ends. The run's own timeout is far below the 60 s wait that applies
 * while other turns run: a bridge that waited would be cut off without its answer.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { initAndPrompt, runUnderLimit } from "../support/under-limit.js";

let root: string | undefined;
afterEach(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

it("a session log the limit leaves no descriptor for is -32001 out-of-descriptors at once; enough, and the turn runs", () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-log-fds-"));
  const ws = path.join(root, "ws");
  fs.mkdirSync(ws);
  const input = initAndPrompt(initParams(ws));
  const seen = new Set<string>();
  for (let limit = 14; limit <= 44; limit++) {
    const sessions = path.join(root, `sessions-${limit}`);
    const started = runUnderLimit(limit, ["--stdio", "--session-root", sessions], input, 20_000);
    if (!started) {
      seen.add("no start");
      continue;
    }
    const { run, frames } = started;
    const at = `limit ${limit}: ${run.stderr.slice(0, 600)}`;
    const answer = frames.find((f) => f.id === 2);
    expect(answer, at).toBeDefined();
    expect([run.status, run.signal], at).toEqual([0, null]);
    if (answer.error) {
      expect(answer.error.code, at).toBe(-32001);
      expect(answer.error.data, at).toEqual({ kind: "out-of-descriptors" });
      expect(answer.error.message, at).toMatch(/nothing running that could free one.*ulimit -n/);
      seen.add("out-of-descriptors");
    } else {
      expect(answer.result, at).toEqual({ status: "ok", reason: { kind: "completed" } });
      seen.add("ok");
    }
  }
  expect([...seen].sort()).toEqual(["no start", "ok", "out-of-descriptors"]);
}, 300_000);

it("under the limit the bridge is built for (64), more sessions than fit with their logs open all run: idle sessions' logs are closed to make room", () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-log-fds-"));
  const ws = path.join(root, "ws");
  fs.mkdirSync(ws);
  const sessions = 90;
  const input = [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: initParams(ws) },
    ...Array.from({ length: sessions }, (_, i) => ({ jsonrpc: "2.0", id: 10 + i, method: "session/prompt", params: promptParams(`s${i}`) })),
  ]
    .map((f) => JSON.stringify(f) + "\n")
    .join("");
  const started = runUnderLimit(64, ["--stdio", "--session-root", path.join(root, "sessions")], input, 60_000);
  expect(started, "the bridge answers initialize under a limit of 64").toBeDefined();
  const { run, frames } = started!;
  const answers = frames.filter((f) => typeof f.id === "number" && f.id >= 10);
  expect(answers.length, run.stderr.slice(0, 600)).toBe(sessions);
  for (const answer of answers) expect(answer.result, `prompt ${answer.id}: ${JSON.stringify(answer.error)}`).toEqual({ status: "ok", reason: { kind: "completed" } });
  expect([run.status, run.signal]).toEqual([0, null]);
}, 120_000);

it("under a limit of 64, session/list, read and fork are answered while idle sessions' logs fill the table: those logs are closed to make room", async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-log-fds-"));
  const ws = path.join(root, "ws");
  fs.mkdirSync(ws);
  const c = new RawClient({ command: "prlimit", args: ["--nofile=64", BINARY, "--stdio", "--session-root", path.join(root, "sessions")] });
  try {
    c.request("init", "initialize", initParams(ws));
    expect((await c.response("init")).result).toBeDefined();
    // One session more after another: their logs stay open while idle, until the table is full.
    for (let i = 0; i < 60; i++) {
      c.request(`p${i}`, "session/prompt", promptParams(`s${i}`));
      expect((await c.response(`p${i}`)).result, `prompt ${i}`).toEqual({ status: "ok", reason: { kind: "completed" } });
      for (const [id, method, params] of [
        [`l${i}`, "session/list", {}],
        [`r${i}`, "session/read", { sessionId: "s0" }],
        [`f${i}`, "session/fork", { sessionId: `s${i}`, newSessionId: `f${i}` }],
      ] as const) {
        c.request(id, method, params);
        const answer = await c.response(id);
        expect(answer.error, `${method} after ${i + 1} sessions`).toBeUndefined();
      }
    }
    c.end();
    expect(await c.exit()).toEqual({ code: 0, signal: null });
  } finally {
    await c.dispose();
  }
}, 120_000);
