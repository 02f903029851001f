/**
 * `session/delete` and another bridge on the same session root: the delete removes the session's
 * checkpoints and its log under the session's lock, and the moment it lets the lock go, another
 * bridge may start a new session under the freed id and begin its checkpoints. Nothing of the
 * delete may run after that moment: it would remove the new session's checkpoints.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider } from "../../src/providers/scripted.js";
import { turns, workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-delete-race");

it("a delete removes nothing once it has let the session's lock go: another bridge's new checkpoints of the id stay", async () => {
  let otherBridge: (() => void) | undefined;
  class RacedStore extends SessionStore {
    override delete(sessionId: string): boolean {
      const deleted = super.delete(sessionId);
      otherBridge?.();
      return deleted;
    }
  }
  const store = new RacedStore(each.root, each.ws.dir);
  const script = turns([{ toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "a\n" } }] }, { text: "done" }]);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 3, permissionMode: "workspace-write",
    tools: (await import("../../src/tools/registry.js")).BUILTIN_TOOLS.filter((t) => t.name === "write_file"), subagentDepth: 0, store, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  expect((await rt.prompt("s", [{ type: "text", text: "go" }])).kind).toBe("completed");
  const folder = path.join(store.directory, "s.checkpoints");
  expect(fs.existsSync(folder)).toBe(true);
  const theirs = path.join(folder, "journal.jsonl");
  otherBridge = () => {
    // What the other bridge's new session "s" has written by then (its log, its first checkpoint).
    expect(fs.existsSync(folder), "the delete removed the checkpoints under the lock").toBe(false);
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(theirs, "{}\n");
  };
  expect(rt.deleteSession("s")).toBe(true);
  expect(fs.existsSync(theirs)).toBe(true);
  rt.closeAll();
});
