/**
 * A burst of new sessions cannot exhaust the bridge's file descriptors: 2000 prompts for 2000
 * new sessions written at once (pipelined, none awaited) to a bridge whose open-file limit is
 * 256. Each running turn holds its session's log open, so before the admission bound
 * (src/agent/turn-admission.ts) a quarter of them failed -32603 EMFILE; now at most a bounded
 * number of turns run at a time and the rest wait their turn in order (docs/guarantees.md).
 * Every prompt is answered exactly once, none with -32603. Generous timeouts, no timing
 * assertions: the machine may be slow.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

const PROMPTS = 2000;
const FD_LIMIT = 256;

let ws: TempWorkspace;
let root: string;
let client: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-burst-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-burst-root-"));
});

afterEach(async () => {
  await client?.dispose();
  client = undefined;
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Writes PROMPTS prompts of new sessions at once; returns what failed, after checking each was answered once. */
async function burst(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const script = ws.script("hi.json", turns([{ text: "hello" }]));
  client = new RawClient({ command: "prlimit", args: [`--nofile=${FD_LIMIT}`, BINARY, "--stdio", "--session-root", root], env });
  client.request(0, "initialize", initParams(ws.dir, script));
  expect((await client.response(0, 60_000)).result).toBeDefined();
  // One write of every request: the bridge reads them in a few chunks and starts them together.
  client.send(...Array.from({ length: PROMPTS }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "session/prompt", params: promptParams(`b${i + 1}`) })));
  const failures: string[] = [];
  for (let id = 1; id <= PROMPTS; id++) {
    const answer = await client.response(id, 240_000);
    if (answer.error) failures.push(`b${id}: ${answer.error.code} ${answer.error.message}`);
    else if (answer.result?.status !== "ok") failures.push(`b${id}: ${JSON.stringify(answer.result)}`);
  }
  // Exactly once: one response frame per id.
  const ids = client.frames.filter((f) => f.id !== undefined && f.method === undefined).map((f) => f.id);
  expect(ids.length).toBe(PROMPTS + 1);
  expect(new Set(ids).size).toBe(PROMPTS + 1);
  // The bridge still serves.
  client.request("list", "session/list", {});
  const list = await client.response("list", 60_000);
  expect(list.error).toBeUndefined();
  expect(list.result.sessions.length).toBe(PROMPTS - failures.length);
  return failures;
}

it(`${PROMPTS} pipelined prompts of new sessions under a ${FD_LIMIT}-file limit: each answered once, all ok`, async () => {
  const failures = await burst();
  expect(failures.slice(0, 5), `${failures.length} of ${PROMPTS} failed`).toEqual([]);
}, 600_000);

it("with no bound on running turns, running out of descriptors makes a prompt wait for one, never -32603", async () => {
  // Every turn is admitted at once: the opens that fail EMFILE wait for a turn to end and retry
  // (turn-admission.ts, withDescriptors); a prompt that could not get one in time would be the
  // retryable -32001 out-of-descriptors, never an internal error.
  const failures = await burst({ ...process.env, HARNESS_MAX_RUNNING_TURNS: "100000" });
  expect(failures.filter((f) => !/: -32001 .*out of file descriptors/.test(f)).slice(0, 5)).toEqual([]);
  expect(failures.slice(0, 5), `${failures.length} of ${PROMPTS} failed`).toEqual([]);
}, 600_000);
