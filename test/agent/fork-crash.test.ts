/**
 * A bridge killed at any moment of a `session/fork` leaves the fork whole (its log and the
 * checkpoints of the turns it copied) or not at all: never a fork that is listed and can be
 * prompted but rewinds nothing, and whose id a retry finds taken (docs/checkpoints.md).
 *
 * A kill is simulated without timing luck: what SIGKILL leaves is the session root as it is at
 * that moment (nothing is lost from the page cache), so the test copies the root at chosen
 * moments of the fork — from inside the checkpoint copy — and starts another runtime, as the
 * next bridge would, on each copy. The copied locks name this process, which does not hold
 * them: stale, as a killed bridge's are (lock.ts).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import { toolsFor } from "../../src/tools/registry.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-fork-crash");
const images: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const image of images.splice(0)) fs.rmSync(image, { recursive: true, force: true });
});

const text = (t: string) => [{ type: "text" as const, text: t }];
// Every turn overwrites f.txt: its previous content is kept in the turn's checkpoint.
const script: Script = { turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "f.txt", content: "changed" } }] }, { text: "done" }] }] };

function runtime(root: string): AgentRuntime {
  return new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "workspace-write",
    tools: toolsFor("workspace-write", ["write_file"]), subagentDepth: 1, store: new SessionStore(root, each.ws.dir), logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
}

it("leaves, killed at any moment, a whole fork or none: the next bridge lists none and makes it again, or rewinds the one it lists", async () => {
  const file = path.join(each.ws.dir, "f.txt");
  fs.writeFileSync(file, "original");
  const source = runtime(each.root);
  expect(await source.prompt("s", text("write"))).toEqual({ kind: "completed" });
  source.closeAll();

  // The session root as a kill at this moment would leave it.
  const taken: Array<[string, string]> = [];
  const image = (moment: string) => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), "hb-fork-crash-image-"));
    images.push(copy);
    fs.cpSync(each.root, copy, { recursive: true });
    taken.push([moment, copy]);
  };
  const copyTo = CheckpointStore.prototype.copyTo;
  vi.spyOn(CheckpointStore.prototype, "copyTo").mockImplementation(function (this: CheckpointStore, target, turn) {
    image("before the checkpoints are copied");
    const append = target.append.bind(target);
    vi.spyOn(target, "append").mockImplementation((records, sync) => {
      image("with the blobs copied, before the journal");
      append(records, sync);
    });
    copyTo.call(this, target, turn);
    image("with the checkpoints copied");
  });
  const forking = runtime(each.root);
  expect(forking.forkSession("s", "copy", undefined)).toBeUndefined();
  forking.closeAll();
  image("after the fork");
  vi.restoreAllMocks();
  expect(taken.map(([moment]) => moment)).toEqual([
    "before the checkpoints are copied",
    "with the blobs copied, before the journal",
    "with the checkpoints copied",
    "after the fork",
  ]);

  for (const [moment, root] of taken) {
    const next = runtime(root);
    const listed = next.catalog.list().sessions.map((s) => s.sessionId);
    if (moment === "after the fork") expect(listed).toContain("copy");
    else if (!listed.includes("copy")) {
      // No fork: nothing of it can be read, and the same fork goes through.
      expect(next.catalog.read("copy", undefined, 10), moment).toBeUndefined();
      expect(next.forkSession("s", "copy", undefined), moment).toBeUndefined();
    }
    // The fork that is there is whole: it rewinds the file its copied turn wrote.
    fs.writeFileSync(file, "changed");
    const rewound = await next.rewind("copy", { sessionId: "copy", turn: 1, files: true, conversation: false });
    expect(rewound, moment).toMatchObject({ restored: ["f.txt"], conflicts: [], unrestored: [] });
    expect(fs.readFileSync(file, "utf8"), moment).toBe("original");
    next.closeAll();
  }
});
