/**
 * Many sessions stay bounded: a bridge that served thousands of sessions holds open only the
 * logs of the sessions in flight plus `IDLE_SESSIONS_KEPT` idle ones, so a low open-file limit
 * never turns into EMFILE for a new session; an evicted session is reloaded from its log by its
 * next prompt, with its history and `seq` continuing. Through the binary, under `prlimit`.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IDLE_SESSIONS_KEPT } from "../../src/agent/runtime.js";
import { BINARY, RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

const SESSIONS = 2000;
const FD_LIMIT = 256;

let ws: TempWorkspace;
let root: string;
let client: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-many-sessions-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-many-sessions-root-"));
});

afterEach(async () => {
  await client?.dispose();
  client = undefined;
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const openFds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

describe("many sessions", () => {
  it(`${SESSIONS} sessions under a ${FD_LIMIT}-file limit: no EMFILE, open files bounded, an evicted session resumes`, async () => {
    expect(IDLE_SESSIONS_KEPT).toBeLessThan(FD_LIMIT / 2);
    const script = ws.script("hi.json", turns([{ text: "hello" }]));
    client = new RawClient({ command: "prlimit", args: [`--nofile=${FD_LIMIT}`, BINARY, "--stdio", "--session-root", root] });
    client.request(0, "initialize", initParams(ws.dir, script));
    expect((await client.response(0)).result).toBeDefined();
    const batch = 20;
    for (let start = 0; start < SESSIONS; start += batch) {
      const ids = Array.from({ length: batch }, (_, i) => start + i + 1);
      for (const id of ids) client.request(id, "session/prompt", promptParams(`s${id}`));
      for (const id of ids) {
        const answer = await client.response(id, 30_000);
        expect(answer.error, `session s${id}`).toBeUndefined();
        expect(answer.result).toEqual({ status: "ok", reason: { kind: "completed" } });
      }
    }
    const pid = client.child.pid!;
    expect(openFds(pid)).toBeLessThan(IDLE_SESSIONS_KEPT + 40);

    // s1 was evicted long ago: its next prompt reloads it, history and seq included.
    const firstTurn = client.events("s1");
    const lastSeq = Math.max(...firstTurn.map((e) => e.seq));
    client.request("again", "session/prompt", promptParams("s1"));
    expect((await client.response("again", 30_000)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const secondTurn = client.events("s1").slice(firstTurn.length);
    expect(secondTurn[0].seq).toBe(lastSeq + 1);
    expect(secondTurn.find((e) => e.type === "turn/start")?.data.turn).toBe(2);
  }, 180_000);
});
