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

  it("a subagent's session prompted by the client itself is another session for its parent's turn", async () => {
    rig = new Rig(true, "hb-rewind-two-sessions-");
    const script = {
      turns: [
        { steps: [{ toolCalls: [{ name: "task", arguments: { prompt: "look around" } }] }, { text: "done" }] },
        { steps: [{ toolCalls: [{ name: "bash", arguments: { command: COMMAND } }] }, { text: "done" }] },
      ],
      subagent: {
        turns: [
          { steps: [{ text: "nothing to do" }] },
          { steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "B_work.txt", content: "b\n" } }] }, { text: "written" }] },
        ],
      },
    };
    const c = await rig.bridge(script, process.env, { permissionMode: "full" });
    await rig.prompt(c, "p");
    const child = c.frames.find((f) => f.method === "subagent.started")?.params?.childSessionId as string;
    expect(child).toMatch(/^p\.task-/);
    c.request("p2", "session/prompt", promptParams("p", "go"));
    const first = path.join(rig.ws.dir, ".first");
    for (let i = 0; i < 200 && !fs.existsSync(first); i++) await new Promise((r) => setTimeout(r, 25));
    // The client prompts the child session itself: it runs beside its parent's turn, not in it.
    await rig.prompt(c, child);
    expect((await c.response("p2")).result?.status).toBe("ok");
    const result = await rig.ok(c, "session/rewind", { sessionId: "p", turn: 2, conversation: false });
    expect([result.removed, result.conflicts]).toEqual([["A.txt"], ["B_work.txt"]]);
    expect(rig.read("B_work.txt")).toBe("b\n");
  });

  it("a rewind while another session's turn records is that turn's other session", async () => {
    rig = new Rig(true, "hb-rewind-two-sessions-");
    const script = {
      turns: [
        { steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "f.txt", content: "f\n" } }] }, { text: "done" }] },
        { steps: [{ toolCalls: [{ name: "bash", arguments: { command: "mkdir .first; sleep 1.5; echo b > B.txt" } }] }, { text: "done" }] },
      ],
    };
    const c = await rig.bridge(script, process.env, { permissionMode: "full" });
    await rig.prompt(c, "a");
    await rig.prompt(c, "b"); // b's turn 1 writes f.txt too (the same bytes): b's turn 2 is the one that matters
    c.request("b2", "session/prompt", promptParams("b", "go"));
    const first = path.join(rig.ws.dir, ".first");
    for (let i = 0; i < 200 && !fs.existsSync(first); i++) await new Promise((r) => setTimeout(r, 25));
    // a's rewind removes f.txt while b's turn 2 records.
    expect((await rig.ok(c, "session/rewind", { sessionId: "a", turn: 1, conversation: false })).removed).toEqual(["f.txt"]);
    expect((await c.response("b2")).result?.status).toBe("ok");
    const undo = await rig.ok(c, "session/rewind", { sessionId: "b", turn: 2, conversation: false });
    // B.txt is b's own; f.txt's removal was a's rewind, not b's to put back.
    expect([undo.removed, undo.restored, undo.conflicts]).toEqual([["B.txt"], [], ["f.txt"]]);
    expect(rig.read("f.txt")).toBeUndefined();
  });
});
