/**
 * The bound on idle sessions (loaded-sessions.ts) against a prompt that waits for its turn to be
 * admitted: its session is busy, yet still idle (loaded, its log open, not taken). When the
 * least recently used idle session is such a one, it must stay where the bound and `closeIdle`
 * find it: a prompt cancelled while waiting never takes it back, and a session dropped from the
 * idle ones but still loaded would hold its log open for the life of the process.
 */
import { expect, it } from "vitest";
import { AgentRuntime, IDLE_SESSIONS_KEPT } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider } from "../../src/providers/scripted.js";
import type { ModelProvider, ModelRequest } from "../../src/providers/types.js";
import { turns, workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-idle-orphan");

const text = (t: string) => [{ type: "text" as const, text: t }];

it("a session whose waiting prompt was cancelled stays among the idle ones: its log is closed by the bound or when descriptors run out", async () => {
  const inner = new ScriptedProvider(turns([{ text: "done" }]));
  let hold: Promise<void> | undefined;
  const provider: ModelProvider = {
    name: "scripted",
    async *stream(request: ModelRequest, signal: AbortSignal) {
      if (request.sessionId === "blocker") await hold;
      yield* inner.stream(request, signal);
    },
  };
  const store = new SessionStore(each.root, each.ws.dir);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider, model: "test-script", system: "test", maxSteps: 2, permissionMode: "workspace-write",
    tools: [], subagentDepth: 0, store, logger: silentLogger, maxRunningTurns: 1,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  // s0 … s64: the idle ones are s1 … s64 (s0, the least recently used, was closed), s1 the oldest.
  for (let i = 0; i <= IDLE_SESSIONS_KEPT; i++) expect((await rt.prompt(`s${i}`, text("hi"))).kind).toBe("completed");
  expect(store.openLogs.has("s0")).toBe(false);
  expect(store.openLogs.has("s1")).toBe(true);
  // A turn holds the one slot; s1's prompt waits for it (busy, still idle and loaded).
  let go!: () => void;
  hold = new Promise<void>((resolve) => (go = resolve));
  const blocker = rt.prompt("blocker", text("hi"));
  const waiting = rt.prompt("s1", text("again"));
  expect(rt.isBusy("s1")).toBe(true);
  // A compaction of s0 (no slot needed) loads it and releases it: the idle ones are one too many,
  // and the least recently used is s1.
  expect(await rt.compact("s0")).toBe(false);
  expect(await rt.cancel("s1")).toBe(true);
  expect((await waiting).kind).toBe("aborted");
  // Out of descriptors: every idle log is closed, s1's too.
  rt.closeIdleSessions();
  expect([...store.openLogs.keys()]).toEqual(["blocker"]);
  go();
  expect((await blocker).kind).toBe("completed");
  // s1 is whole and resumes where it was.
  expect((await rt.prompt("s1", text("once more"))).kind).toBe("completed");
  expect(rt.catalog.read("s1", undefined, 1000)!.events.filter((e) => e.type === "turn/end").map((e) => (e.data as { turn: number }).turn)).toEqual([1, 2]);
  rt.closeAll();
});

it("a log whose sync fails is closed all the same when its session is dropped: its descriptor is given back", async () => {
  let failSync = false;
  class FailingSyncStore extends SessionStore {
    override open(...args: Parameters<SessionStore["open"]>) {
      const log = super.open(...args);
      const sync = log.sync.bind(log);
      log.sync = () => {
        if (failSync) throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
        sync();
      };
      return log;
    }
  }
  const store = new FailingSyncStore(each.root, each.ws.dir);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(turns([{ text: "done" }])), model: "test-script", system: "test", maxSteps: 2,
    permissionMode: "workspace-write", tools: [], subagentDepth: 0, store, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  expect((await rt.prompt("a", text("hi"))).kind).toBe("completed");
  expect((await rt.prompt("b", text("hi"))).kind).toBe("completed");
  failSync = true;
  expect(rt.closeIdleSessions()).toBe(true);
  expect([...store.openLogs.keys()]).toEqual([]);
  failSync = false;
  expect((await rt.prompt("a", text("again"))).kind).toBe("completed");
  failSync = true;
  rt.closeAll();
  expect([...store.openLogs.keys()]).toEqual([]);
});
