/**
 * A subagent's child session belongs to its parent's `task` call from the moment it is taken
 * (opened and locked) until it is released: the client can learn its id before its turn starts
 * (`subagent/started`, `session/list`) and after its turn ended (`subagent/finished`, which
 * the call awaits room on stdout for). Meanwhile a prompt, a compaction, a rewind or a delete of
 * it is refused as busy: none may run on the session object the call still holds, nor close its
 * log under it.
 */
import { expect, it } from "vitest";
import { AgentRuntime, SessionBusyError } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import { taskTool } from "../../src/tools/task.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-child-busy");

const script: Script = {
  turns: [{ steps: [{ toolCalls: [{ id: "t1", name: "task", arguments: { prompt: "look around" } }] }, { text: "parent done" }] }],
  subagent: { turns: [{ steps: [{ text: "child says hi" }] }] },
};
const text = (t: string) => [{ type: "text" as const, text: t }];

/** A runtime whose `subagent/started` or `subagent/finished` waits, while held, for `go`. */
function runtime(hold: "started" | "finished") {
  let entered!: (childId: string) => void;
  const inWindow = new Promise<string>((resolve) => (entered = resolve));
  let go!: () => void;
  const gate = new Promise<void>((resolve) => (go = resolve));
  const held = async (childId: string) => {
    entered(childId);
    await gate;
  };
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "workspace-write",
    tools: [taskTool], subagentDepth: 1, store: new SessionStore(each.root, each.ws.dir), logger: silentLogger,
    sink: {
      sessionEvent: async () => undefined,
      subagentStarted: (p) => (hold === "started" ? held(p.childSessionId) : Promise.resolve()),
      subagentFinished: (p) => (hold === "finished" ? held(p.childSessionId) : Promise.resolve()),
    },
  });
  return { rt, inWindow, go };
}

for (const hold of ["started", "finished"] as const) {
  it(`while subagent/${hold} waits, the child session is busy: a prompt, a compaction, a rewind and a delete of it are refused`, async () => {
    const { rt, inWindow, go } = runtime(hold);
    const parent = rt.prompt("parent", text("delegate"));
    const child = await inWindow;
    expect(rt.isBusy(child)).toBe(true);
    expect(() => rt.prompt(child, text("sneak in"))).toThrow(SessionBusyError);
    expect(() => rt.compact(child)).toThrow(SessionBusyError);
    expect(() => rt.rewind(child, { turn: 1 } as never)).toThrow(SessionBusyError);
    expect(() => rt.deleteSession(child)).toThrow(SessionBusyError);
    // Out of descriptors meanwhile: the idle logs are closed, never the child's.
    rt.closeIdleSessions();
    go();
    expect((await parent).kind).toBe("completed");
    const events = rt.catalog.read(child, undefined, 1000)!.events;
    expect(events.filter((e) => e.type === "turn/end")).toHaveLength(1);
    expect(rt.isBusy(child)).toBe(false);
    // Released once the call is done: the child's next prompt is its own turn 2.
    expect((await rt.prompt(child, text("now you"))).kind).toBe("completed");
    rt.closeAll();
  });
}
