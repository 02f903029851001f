/**
 * The idle sessions' open logs are bounded by the open-file limit, not only by a fixed 64: under
 * `ulimit -n 64` the 64 idle logs took every descriptor Node's own left, so the running turns'
 * other opens failed EMFILE — each such turn's checkpoint journal among them, the turn then left
 * without a checkpoint (no `checkpoint` event, a warning on stderr only). Through the binary,
 * under `prlimit --nofile=64`: 200 pipelined prompts of new sessions, each running a changing
 * tool, every one answered `ok` with its checkpoint.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { idleSessionsKept, IDLE_SESSIONS_KEPT } from "../../src/agent/loaded-sessions.js";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

const SESSIONS = 200;
const FD_LIMIT = 64;

let ws: TempWorkspace;
let root: string;
let client: RawClient | undefined;
beforeEach(() => {
  ws = tempWorkspace("hb-idle-logs-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-idle-logs-root-"));
});
afterEach(async () => {
  await client?.dispose();
  client = undefined;
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

describe("idle session logs under a low open-file limit", () => {
  it("the bound is a quarter of the limit, between 4 and 64", () => {
    expect(idleSessionsKept(undefined)).toBe(IDLE_SESSIONS_KEPT);
    expect(idleSessionsKept(1_048_576)).toBe(64);
    expect(idleSessionsKept(256)).toBe(64);
    expect(idleSessionsKept(64)).toBe(16);
    expect(idleSessionsKept(12)).toBe(4);
  });

  it(`${SESSIONS} sessions under a ${FD_LIMIT}-file limit: every turn answered ok, with its checkpoint`, async () => {
    const script = ws.script("write.json", turns([{ toolCalls: [{ name: "write_file", arguments: { path: "out.txt", content: "x" } }] }, { text: "done" }]));
    client = new RawClient({ command: "prlimit", args: [`--nofile=${FD_LIMIT}`, BINARY, "--stdio", "--session-root", root] });
    client.request(0, "initialize", initParams(ws.dir, script));
    expect((await client.response(0)).result).toBeDefined();
    for (let id = 1; id <= SESSIONS; id++) client.request(id, "session/prompt", promptParams(`s${id}`));
    for (let id = 1; id <= SESSIONS; id++) expect((await client.response(id, 60_000)).result, `session s${id}`).toEqual({ status: "ok", reason: { kind: "completed" } });
    const without = [];
    for (let id = 1; id <= SESSIONS; id++) if (!client.events(`s${id}`).some((e) => e.type === "checkpoint")) without.push(`s${id}`);
    expect(without, "sessions whose turn has no checkpoint").toEqual([]);
    expect(client.stderr).not.toContain("could not be recorded");
  }, 120_000);
});
