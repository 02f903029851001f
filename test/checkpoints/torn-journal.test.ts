/**
 * A journal whose last line was torn (a full disk, a kill mid-write) must not take the next
 * record with it: `append` ends the torn line first, so every record written after it is read
 * back whole. And a turn whose record cannot be written says so on the log (docs/PROTOCOL.md: a
 * turn whose checkpoint cannot be kept runs without one, with a warning on stderr).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore, type JournalRecord } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import type { Logger } from "../../src/log.js";
import type { Session } from "../../src/agent/session.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace | undefined;
let root: string | undefined;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  ws = root = undefined;
});

const store = () => new CheckpointStore((root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-torn-journal-"))), "s");
const skip = (turn: number, p: string): JournalRecord => ({ type: "skip", turn, path: p });

describe("a torn journal line", () => {
  it("does not take the record appended after it", () => {
    const s = store();
    s.append([skip(1, "a.txt")]);
    // What a write cut short leaves: the start of a record, no line end.
    fs.appendFileSync(path.join(s.folder, "journal.jsonl"), '{"type":"turn","turn":1,"kind":"git","entr');
    s.append([skip(2, "b.txt")], true);
    s.append([skip(3, "c.txt")]);
    expect(s.journal()).toEqual([skip(1, "a.txt"), skip(2, "b.txt"), skip(3, "c.txt")]);
  });

  it("keeps a whole record that only lacks its line end", () => {
    const s = store();
    s.append([skip(1, "a.txt")]);
    const file = path.join(s.folder, "journal.jsonl");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").trimEnd());
    s.append([skip(2, "b.txt")]);
    expect(s.journal()).toEqual([skip(1, "a.txt"), skip(2, "b.txt")]);
  });
});

describe("a turn whose record cannot be written", () => {
  it("warns on the log, naming the session and the turn", async () => {
    ws = tempWorkspace("hb-torn-journal-ws-");
    ws.file("a.txt", "a\n");
    const s = store();
    const cp = new SessionCheckpoints(s, ws.dir);
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), error() {}, info() {}, debug() {} } as unknown as Logger;
    const recorder = new TurnRecorder(cp, 4, "workspace-write", logger);
    await recorder.beforeTool("write_file", false, { path: "a.txt" });
    ws.file("a.txt", "changed\n");
    const append = s.append.bind(s);
    s.append = (records, sync) => {
      if (records.some((r) => r.type === "turn")) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      append(records, sync);
    };
    const emitted: string[] = [];
    await recorder.finish({ id: "s1", emit: async (type: string) => void emitted.push(type) } as unknown as Session);
    expect(emitted).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/session s1, turn 4: .*checkpoint could not be recorded.*ENOSPC/);
  });
});
