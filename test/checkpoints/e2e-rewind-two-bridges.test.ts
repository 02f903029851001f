/**
 * `session/rewind` with two bridge processes on one session root and workspace (two terminals
 * on one project), through the binary. A rewind writes the session like a turn does, so it
 * takes the session's lock (docs/guarantees.md, "Two processes on one session root"): while
 * one bridge's turn runs, the other's rewind is `session-locked` and changes nothing; once the
 * turn has ended, a bridge whose loaded copy is stale rewinds the session as the log and the
 * checkpoint journal now hold it (the other's turns included), and the other bridge's next
 * turn goes on from the cut history. Prompts and rewinds racing in a loop leave every line of
 * the log and the journal whole and never give one turn number twice.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { wholeJsonLines } from "../support/json-lines.js";
import { promptParams, type Frame } from "../support/raw-client.js";
import { turns } from "../support/scripts.js";
import { Rig, firstRequestTokens } from "./rewind-support.js";

let rig: Rig;
afterEach(async () => rig?.dispose());

const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: {} }, readOnly: true };

/** Turn 1 writes new.txt; turn 2 asks the client's `lookup`, then writes keep.txt; turn 3 is a rewind's own number; turn 4 answers. */
const SCRIPT = turns(
  [{ toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "one\n" } }] }, { text: "one" }],
  [{ toolCalls: [{ id: "ask", name: "lookup" }] }, { toolCalls: [{ name: "write_file", arguments: { path: "keep.txt", content: "turn2\n" } }] }, { text: "two" }],
  [{ text: "three" }],
  [{ text: "four" }],
);

function expectLocked(frame: Frame): void {
  expect(frame.error, JSON.stringify(frame)).toMatchObject({ code: -32001, data: { kind: "session-locked", sessionId: "s" } });
}

describe("session/rewind and a second bridge on the same session", () => {
  it("is session-locked while the other bridge's turn runs, then rewinds what that bridge did, and that bridge goes on from the cut", async () => {
    rig = new Rig(false, "hb-rewind-two-");
    const a = await rig.bridge(SCRIPT, process.env, { clientTools: [lookup] });
    const b = await rig.bridge(SCRIPT, process.env, { clientTools: [lookup] });
    await rig.prompt(a, "s");
    // B loads the session now (its copy goes stale when A's second turn writes).
    expect((await rig.events(b, "s")).filter((e) => e.type === "turn/end")).toHaveLength(1);

    // A's turn 2 waits for its client tool, holding the session.
    const second = rig.call(a, "session/prompt", promptParams("s", "go on"));
    await a.waitFrame((f) => f.params?.event?.type === "tool/request", "A's tool/request");
    const journal = path.join(rig.store(), "journal.jsonl");
    const journalBefore = fs.readFileSync(journal, "utf8");
    expectLocked(await rig.call(b, "session/rewind", { sessionId: "s", turn: 1 }));
    expect(rig.read("new.txt")).toBe("one\n");
    expect(fs.readFileSync(journal, "utf8")).toBe(journalBefore);

    a.request("answer", "session/tool_result", { sessionId: "s", callId: "ask", content: [{ type: "text", text: "found" }] });
    expect((await second).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(rig.read("keep.txt")).toBe("turn2\n");

    // B's copy is stale: its rewind of turn 2 is of the session as A left it.
    const rewound = await rig.ok(b, "session/rewind", { sessionId: "s", turn: 2 });
    expect(rewound).toEqual({ restored: ["keep.txt"], removed: [], conflicts: [], unrestored: [] });
    expect(rig.read("keep.txt")).toBe("original\n");
    expect(rig.read("new.txt")).toBe("one\n");

    // A reloads the session for its next turn: turn 4 (the rewind took 3), on the history cut before turn 2.
    await rig.prompt(a, "s");
    const events = await rig.events(a, "s");
    expect(events.filter((e) => e.type === "turn/start").map((e) => e.data.turn)).toEqual([1, 2, 4]);
    expect(events.filter((e) => e.type === "checkpoint").map((e) => e.data)).toEqual([
      { turn: 1, files: 1, kind: "files" },
      { turn: 2, files: 1, kind: "files" },
      { turn: 3, files: 1, kind: "files", rewind: 2 },
    ]); // turn 4 changed no file: no checkpoint
    const tokens = firstRequestTokens(events);
    expect(tokens.get(4)).toBe(tokens.get(2));
  });

  it("prompts of one bridge racing rewinds of the other, 8 rounds: each is done or session-locked, every line whole, no turn number twice", async () => {
    rig = new Rig(false, "hb-rewind-race-");
    const script = turns([{ toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "written\n" } }] }, { text: "done", chunkSize: 2, delayMs: 2 }]);
    const a = await rig.bridge(script);
    const b = await rig.bridge(script);
    await rig.prompt(a, "s");
    let done = 0;
    let locked = 0;
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all([
        rig.call(a, "session/prompt", promptParams("s", `round ${round}`)),
        rig.call(b, "session/rewind", { sessionId: "s", turn: 1, conversation: false, force: true }),
      ]);
      for (const frame of answers) {
        if (frame.error) {
          expectLocked(frame);
          locked += 1;
        } else {
          if ("status" in frame.result) expect(frame.result.status).toBe("ok");
          done += 1;
        }
      }
    }
    expect(done + locked).toBe(16);
    expect(done).toBeGreaterThanOrEqual(8);
    const log = wholeJsonLines(path.join(rig.root, workspaceFolderName(rig.ws.dir), "s.jsonl"));
    const numbers = log.filter((e) => e.type === "turn/start" || (e.type === "checkpoint" && e.data.rewind !== undefined)).map((e) => e.data.turn);
    expect(new Set(numbers).size).toBe(numbers.length);
    const seqs = log.slice(1).map((e) => e.seq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);
    const records = wholeJsonLines(path.join(rig.store(), "journal.jsonl"));
    expect(records.every((r) => typeof r.type === "string" && Number.isInteger(r.turn))).toBe(true);
    // A third bridge reads the session whole and can still rewind it.
    const c = await rig.bridge(script);
    expect((await rig.ok(c, "session/rewind", { sessionId: "s", turn: 1, conversation: false, force: true })).conflicts).toEqual([]);
    expect(rig.read("new.txt")).toBeUndefined();
  });
});
