/**
 * Two bridge *processes* on one git work tree and one session root (a CI job and a developer,
 * two Python programs): a rewind of A's turn must not undo what B wrote during it without a
 * word (process-activity.ts). B's file tool: that file is a conflict, kept unless `force`; B's
 * `bash` running when A's turn starts recording: the whole turn. A B killed in the middle of its
 * turn marks the turn of A that finds it gone (its bash may have written until then), never a
 * later one.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { promptParams, type RawClient } from "../support/raw-client.js";
import { Rig } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

/** A's turns: write a file, then stay open `holdMs` (the model's answer is slow), so B runs inside it. */
const slowWrite = (file: string, holdMs: number) => [
  { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${file}\n` } }] },
  { text: "done", delayMs: holdMs },
];
const A_SCRIPT = { turns: [{ steps: slowWrite("A.txt", 2000) }, { steps: slowWrite("C.txt", 0) }] };

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(done(), what).toBe(true);
}

/** Bridge B first (its script is read at `initialize`), then A. */
async function bridges(bScript: object): Promise<{ a: RawClient; b: RawClient }> {
  rig = new Rig(true, "hb-rewind-two-processes-");
  const b = await rig.bridge(bScript, process.env, { permissionMode: "full" });
  const a = await rig.bridge(A_SCRIPT);
  return { a, b };
}

describe("two bridge processes' turns at once on one workspace", () => {
  it("B's write_file during A's turn is a conflict for A's rewind, kept; with force it is undone", async () => {
    const { a, b } = await bridges({ turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "B.txt", content: "b\n" } }] }, { text: "done" }] }] });
    a.request("a1", "session/prompt", promptParams("a", "go"));
    await until("A wrote A.txt", () => rig.read("A.txt") !== undefined);
    await rig.prompt(b, "b");
    expect((await a.response("a1")).result?.status).toBe("ok");

    const result = await rig.ok(a, "session/rewind", { sessionId: "a", turn: 1, conversation: false });
    expect([result.removed, result.restored, result.conflicts]).toEqual([["A.txt"], [], ["B.txt"]]);
    expect(rig.read("B.txt")).toBe("b\n");
    // B's own turn noted A's A.txt, which its record does not hold: B's rewind is B's alone.
    expect(await rig.ok(b, "session/rewind", { sessionId: "b", turn: 1, conversation: false })).toMatchObject({ removed: ["B.txt"], conflicts: [] });
    fs.writeFileSync(path.join(rig.ws.dir, "B.txt"), "b\n");
    const forced = await rig.ok(a, "session/rewind", { sessionId: "a", turn: 1, conversation: false, force: true });
    expect(forced.removed).toEqual(["B.txt"]);
    expect(rig.read("B.txt")).toBeUndefined();
  });

  it("B's bash, running when A's turn starts recording, makes every path of A's turn a conflict", async () => {
    const command = "mkdir .b-started; sleep 1; echo b > B.txt";
    const { a, b } = await bridges({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command } }] }, { text: "done" }] }] });
    b.request("b1", "session/prompt", promptParams("b", "go"));
    await until("B's bash started", () => fs.existsSync(path.join(rig.ws.dir, ".b-started")));
    await rig.prompt(a, "a");
    expect((await b.response("b1")).result?.status).toBe("ok");
    expect(rig.read("B.txt")).toBe("b\n");

    const result = await rig.ok(a, "session/rewind", { sessionId: "a", turn: 1, conversation: false });
    expect([result.removed, result.conflicts]).toEqual([[], ["A.txt", "B.txt"]]);
    const forced = await rig.ok(a, "session/rewind", { sessionId: "a", turn: 1, conversation: false, force: true });
    expect(forced.removed).toEqual(["A.txt", "B.txt"]);
  });

  it("a B killed mid-turn marks the turn of A that finds it gone, not A's later turns", async () => {
    const command = "mkdir .b-started; sleep 1; echo b > B.txt; sleep 4";
    const { a, b } = await bridges({ turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command } }] }, { text: "done" }] }] });
    b.request("b1", "session/prompt", promptParams("b", "go"));
    await until("B's bash started", () => fs.existsSync(path.join(rig.ws.dir, ".b-started")));
    a.request("a1", "session/prompt", promptParams("a", "go"));
    await until("B wrote B.txt", () => rig.read("B.txt") !== undefined);
    b.kill("SIGKILL");
    await b.exited;
    expect((await a.response("a1")).result?.status).toBe("ok");
    await rig.prompt(a, "a"); // turn 2 writes C.txt, B long gone

    expect(await rig.ok(a, "session/rewind", { sessionId: "a", turn: 2, conversation: false })).toMatchObject({ removed: ["C.txt"], conflicts: [] });
    const first = await rig.ok(a, "session/rewind", { sessionId: "a", turn: 1, conversation: false });
    expect([first.removed, first.conflicts]).toEqual([[], ["A.txt", "B.txt"]]);
    expect(rig.read("B.txt")).toBe("b\n");
  });
});
