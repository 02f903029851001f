/**
 * Closing many idle sessions at once (out of descriptors: loaded-sessions.ts `closeIdle`; the
 * shutdown: `closeAll`) syncs and closes each log in turn, synchronously: as long as the sessions
 * are many and the disk slow. The session this bridge just answered keeps its lock a moment
 * after its turn (store/lock.ts `kept`), and its linger timer cannot fire meanwhile; closed last
 * (the most recently used), it kept the lock through all the others' syncs, and another bridge
 * prompting it waited only LOCK_WAIT_MS, then was refused. It is let go before the first close.
 */
import * as fs from "node:fs";
import { expect, it, vi } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider } from "../../src/providers/scripted.js";
import { turns, workspaceAndRootEachTest } from "../support/scripts.js";
import { lockPathOf } from "../../src/agent/store/log-format.js";

const each = workspaceAndRootEachTest("hb-kept-close-many");

const text = (t: string) => [{ type: "text" as const, text: t }];

async function answered(): Promise<{ rt: AgentRuntime; store: SessionStore; keptLock: string }> {
  const store = new SessionStore(each.root, each.ws.dir);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(turns([{ text: "done" }])), model: "test-script", system: "test", maxSteps: 2,
    permissionMode: "workspace-write", tools: [], subagentDepth: 0, store, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  for (const id of ["a", "b", "just-answered"]) expect((await rt.prompt(id, text("hi"))).kind).toBe("completed");
  const keptLock = lockPathOf(store.pathOf("just-answered"));
  return { rt, store, keptLock };
}

/** Whether the kept lock was still there when the first of the other sessions' logs was synced. */
function keptAtFirstSync(store: SessionStore, keptLock: string): () => boolean | undefined {
  let seen: boolean | undefined;
  const log = store.openLogs.get("a")!;
  const sync = log.sync.bind(log);
  vi.spyOn(log, "sync").mockImplementation(() => {
    seen ??= fs.existsSync(keptLock);
    sync();
  });
  return () => seen;
}

it("out of descriptors, closing every idle session lets the lock the last one keeps go before the first sync", async () => {
  const { rt, store, keptLock } = await answered();
  const seen = keptAtFirstSync(store, keptLock);
  expect(fs.existsSync(keptLock)).toBe(true); // kept after its turn
  expect(rt.closeIdleSessions()).toBe(true);
  expect(seen()).toBe(false);
  expect(store.openLogs.size).toBe(0);
});

it("at shutdown, closing every session lets the lock the last one keeps go before the first sync", async () => {
  const { rt, store, keptLock } = await answered();
  const seen = keptAtFirstSync(store, keptLock);
  expect(fs.existsSync(keptLock)).toBe(true);
  rt.closeAll();
  expect(seen()).toBe(false);
  expect(fs.existsSync(keptLock)).toBe(false);
});
