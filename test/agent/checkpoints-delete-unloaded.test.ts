/**
 * Without a session log, `session/delete` removes the session's checkpoints from the private
 * folder (checkpoints/by-session.ts `remove`). The session is unloaded first, which forgets its
 * checkpoint handle (loaded-sessions.ts `dropped`): the removal must then need nothing but the
 * folder's name, not a new handle, whose making reads the workspace (its real path) and may
 * fail, turning a delete that happened into an error.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import { toolsFor } from "../../src/tools/registry.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-checkpoints-delete-unloaded");
const script: Script = { turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "f.txt", content: "changed" } }] }, { text: "done" }] }] };

it("deletes a session without a log once its workspace is gone, its checkpoints with it", async () => {
  fs.writeFileSync(path.join(each.ws.dir, "f.txt"), "original");
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "workspace-write",
    tools: toolsFor("workspace-write", ["write_file"]), subagentDepth: 1, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  expect(await rt.prompt("s", [{ type: "text", text: "write" }])).toEqual({ kind: "completed" });
  const checkpoints = (rt as unknown as { checkpoints: { known: Map<string, { store: { folder: string } }> } }).checkpoints;
  const folder = checkpoints.known.get("s")!.store.folder;
  expect(fs.existsSync(folder)).toBe(true);
  fs.rmSync(each.ws.dir, { recursive: true, force: true });
  expect(rt.deleteSession("s")).toBe(true);
  expect(fs.existsSync(folder)).toBe(false);
  expect(checkpoints.known.size).toBe(0);
  rt.closeAll();
});
