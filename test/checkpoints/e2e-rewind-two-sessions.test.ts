/**
 * Two sessions of one bridge running turns on one git work tree at once (as the SDK's asyncio
 * example runs twenty): a rewind of one session's turn must not undo what the other session
 * wrote during it. Here A's command runs while B's writes: neither turn can tell its changes
 * from the other's, so each rewind leaves every path of its turn as a conflict, and `force`
 * undoes them.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { promptParams } from "../support/raw-client.js";
import { Rig } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

// The first session to run it makes `.first` and writes A.txt 1.5 s later; the other writes B_work.txt at once.
const COMMAND = "mkdir .first 2>/dev/null && { sleep 1.5; echo a > A.txt; } || echo b > B_work.txt";
const SCRIPT = { turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command: COMMAND } }] }, { text: "done" }] }] };

describe("two sessions' turns at once on one workspace", () => {
  it("a rewind of either leaves the files both wrote as conflicts, never removes the other's work", async () => {
    rig = new Rig(true, "hb-rewind-two-sessions-");
    const c = await rig.bridge(SCRIPT, process.env, { permissionMode: "full" });
    c.request("a", "session/prompt", promptParams("a", "go"));
    const first = path.join(rig.ws.dir, ".first");
    for (let i = 0; i < 200 && !fs.existsSync(first); i++) await new Promise((r) => setTimeout(r, 25));
    c.request("b", "session/prompt", promptParams("b", "go"));
    for (const id of ["a", "b"]) expect((await c.response(id)).result?.status).toBe("ok");
    expect([rig.read("A.txt"), rig.read("B_work.txt")]).toEqual(["a\n", "b\n"]);

    // B's turn ended before A.txt was written: its record holds B_work.txt alone.
    for (const [sessionId, paths] of [["a", ["A.txt", "B_work.txt"]], ["b", ["B_work.txt"]]] as const) {
      const result = await rig.ok(c, "session/rewind", { sessionId, turn: 1, conversation: false });
      expect([result.removed, result.restored, result.conflicts]).toEqual([[], [], paths]);
      expect([rig.read("A.txt"), rig.read("B_work.txt")]).toEqual(["a\n", "b\n"]);
    }
    const forced = await rig.ok(c, "session/rewind", { sessionId: "a", turn: 1, conversation: false, force: true });
    expect(forced.removed).toEqual(["A.txt", "B_work.txt"]);
  });
});
