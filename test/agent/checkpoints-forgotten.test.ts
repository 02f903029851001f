/**
 * A bridge that serves many sessions in turn keeps checkpoint caches (the snapshot's stat and
 * hash cache, the git index it listed) for its loaded sessions only: a session closed as idle,
 * or deleted, takes its handle with it, and its next turn makes a new one from the folder.
 */
import * as fs from "node:fs";
import { expect, it } from "vitest";
import { AgentRuntime, IDLE_SESSIONS_KEPT } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import { toolsFor } from "../../src/tools/registry.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-checkpoints-forgotten");
const text = (t: string) => [{ type: "text" as const, text: t }];

it("holds a checkpoint handle per loaded session, not per session ever served", async () => {
  const sessions = IDLE_SESSIONS_KEPT + 6;
  // A session's turn N writes fN.txt, so every turn records a checkpoint.
  const script: Script = { turns: [1, 2].map((n) => ({ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: `f${n}.txt`, content: "x" } }] }, { text: "done" }] })) };
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "workspace-write",
    tools: toolsFor("workspace-write", ["write_file"]), subagentDepth: 1, store: new SessionStore(each.root, each.ws.dir), logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  const handles = () => (rt as unknown as { checkpoints: { known: Map<string, unknown> } }).checkpoints.known;
  for (let i = 0; i < sessions; i++) expect(await rt.prompt(`s${i}`, text("write"))).toEqual({ kind: "completed" });
  expect(handles().size).toBeLessThanOrEqual(IDLE_SESSIONS_KEPT);
  expect(handles().has("s0")).toBe(false);
  // The first session, closed as idle, comes back with checkpoints: its turn 2 can be rewound.
  expect(await rt.prompt("s0", text("write again"))).toEqual({ kind: "completed" });
  expect(fs.existsSync(`${each.ws.dir}/f2.txt`)).toBe(true);
  const rewound = await rt.rewind("s0", { sessionId: "s0", turn: 2, files: true, conversation: false });
  expect(rewound).toMatchObject({ conflicts: [] });
  expect(fs.existsSync(`${each.ws.dir}/f2.txt`)).toBe(false);
  rt.deleteSession("s1");
  expect(handles().has("s1")).toBe(false);
  rt.closeAll();
  expect(handles().size).toBe(0);
});
