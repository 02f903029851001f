/**
 * The bound on running turns (agent/turn-admission.ts), through the binary with
 * HARNESS_MAX_RUNNING_TURNS=1: a prompt beyond it is busy at once and waits its turn; cancelled
 * while waiting it answers `aborted` and its session records nothing; once the running turn
 * ends, the next waiting one runs.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { oneTurn, tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let root: string;
let c: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-admission-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-admission-root-"));
});

afterEach(async () => {
  await c?.dispose();
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

it("one running turn at most: the others wait in order, a cancelled waiter answers aborted and records nothing", async () => {
  const script = ws.script("hang.json", oneTurn({ text: "working on it", chunkSize: 4, hang: true }));
  c = new RawClient({ args: ["--stdio", "--session-root", root], env: { ...process.env, HARNESS_MAX_RUNNING_TURNS: "1" } });
  c.request(0, "initialize", initParams(ws.dir, script));
  expect((await c.response(0)).error).toBeUndefined();

  c.request("a", "session/prompt", promptParams("a", "first"));
  await c.waitFrame((f) => f.method === "session.event" && f.params.sessionId === "a" && f.params.event.type === "assistant/chunk", "a's first chunk");
  c.request("b", "session/prompt", promptParams("b", "second"));
  c.request("c", "session/prompt", promptParams("c", "third"));
  // b waits: busy already (a second prompt for it is refused), nothing of it recorded.
  c.request("b2", "session/prompt", promptParams("b", "again"));
  expect((await c.response("b2")).error).toMatchObject({ code: -32001, data: { kind: "session-busy" } });
  c.request("cancel-b", "session/cancel", { sessionId: "b" });
  expect((await c.response("b")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
  expect((await c.response("cancel-b")).result).toEqual({ cancelled: true });
  expect(c.events("b")).toEqual([]);
  c.request("list", "session/list", {});
  expect((await c.response("list")).result.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(["a"]);

  // a ends (cancelled): c, which waited behind it, runs (and hangs in its turn) until cancelled.
  c.request("cancel-a", "session/cancel", { sessionId: "a" });
  expect((await c.response("a")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
  await c.waitFrame((f) => f.method === "session.event" && f.params.sessionId === "c" && f.params.event.type === "assistant/chunk", "c's first chunk");
  c.request("cancel-c", "session/cancel", { sessionId: "c" });
  expect((await c.response("c")).result).toEqual({ status: "aborted", reason: { kind: "aborted" } });
  expect(c.events("c").map((e) => e.type)).toContain("turn/end");
});
