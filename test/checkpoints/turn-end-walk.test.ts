/**
 * The walk at a turn's end (turn-recorder.ts `close`): the snapshot's paths are looked at by
 * index while the listing of now runs in git's own process, then the paths listed now that the
 * snapshot does not hold. What a user relies on: every change of the turn is in its record once
 * (changed, removed, new), whatever the listing holds and whether it fails.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionCheckpoints } from "../../src/agent/checkpoints/session-checkpoints.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { TurnRecorder } from "../../src/agent/checkpoints/turn-recorder.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";
import { commitAll, slowerThanASlice } from "./rewind-support.js";

let ws: TempWorkspace;
let root: string;
afterEach(() => {
  ws?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function repository(): SessionCheckpoints {
  ws = tempWorkspace("hb-turn-end-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-turn-end-root-"));
  for (const name of ["a.txt", "b.txt", "c.txt"]) ws.file(name, `${name}\n`);
  commitAll(ws.dir);
  return new SessionCheckpoints(new CheckpointStore(root, "s"), ws.dir);
}

/** A `bash` turn: the snapshot, then `change` (the command), then the turn's end; its recorded entries. */
async function bashTurn(cp: SessionCheckpoints, change: () => void): Promise<Array<{ path: string; before: unknown; after?: unknown }>> {
  const recorder = new TurnRecorder(cp, 1);
  await recorder.beforeTool("bash", false, {});
  change();
  await (recorder as unknown as { close(): Promise<unknown> }).close();
  const turn = cp.store.journal().find((r) => r.type === "turn");
  if (turn?.type !== "turn") throw new Error("no turn record");
  return turn.entries;
}

const kinds = (entries: Array<{ path: string; before: unknown; after?: unknown }>) =>
  entries.map((e) => `${e.path}: ${e.before === null ? "absent" : "file"} -> ${e.after === null ? "absent" : "file"}`);

describe("the walk at a turn's end", () => {
  it("records a changed, a removed and a new file, each once", async () => {
    const cp = repository();
    const entries = await bashTurn(cp, () => {
      ws.file("a.txt", "changed\n");
      fs.rmSync(path.join(ws.dir, "b.txt"));
      ws.file("d.txt", "new\n");
    });
    expect(kinds(entries)).toEqual(["a.txt: file -> file", "b.txt: file -> absent", "d.txt: absent -> file"]);
  });

  it("looks at a path once when the listing names it twice", async () => {
    const cp = repository();
    const listed = cp.listed.bind(cp);
    cp.listed = async (stage?: boolean) => {
      const out = await listed(stage);
      return out && [...out, ...out];
    };
    const entries = await bashTurn(cp, () => ws.file("a.txt", "changed\n"));
    expect(kinds(entries)).toEqual(["a.txt: file -> file"]);
  });

  it("still looks at the snapshot's paths when the listing of now fails", async () => {
    const cp = repository();
    const listed = cp.listed.bind(cp);
    let calls = 0;
    cp.listed = async (stage?: boolean) => (++calls === 1 ? listed(stage) : undefined);
    const entries = await bashTurn(cp, () => {
      ws.file("a.txt", "changed\n");
      ws.file("d.txt", "new\n");
    });
    // The new file is listed by no one: only the snapshot's paths are seen.
    expect(kinds(entries)).toEqual(["a.txt: file -> file"]);
  });

  it("a listing of now that rejects ends the turn without a record, and is not left unhandled", async () => {
    const cp = repository();
    const listed = cp.listed.bind(cp);
    let calls = 0;
    cp.listed = async (stage?: boolean) => {
      if (++calls === 1) return listed(stage);
      throw new Error("git vanished");
    };
    // Each look takes longer than a pacing slice, so the walk yields to the event loop (where an
    // unhandled rejection is reported) before it awaits the listing.
    cp.look = slowerThanASlice(cp.look.bind(cp));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const recorder = new TurnRecorder(cp, 1);
      await recorder.beforeTool("bash", false, {});
      ws.file("a.txt", "changed\n");
      const emitted: string[] = [];
      await recorder.finish({ emit: async (type: string) => void emitted.push(type) } as never);
      await new Promise((resolve) => setImmediate(resolve));
      expect(emitted).toEqual([]);
      expect(cp.store.journal().some((r) => r.type === "turn")).toBe(false);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
