/**
 * A turn that fails before its first await (a tracer that throws, the tools' listing), or a
 * session whose log this process cannot take up (the Session refuses an event of it), must not
 * keep what it took: the session's lock, which would refuse the session to other bridges and
 * leave this one waiting on itself, and its slot among the running turns, which with a bound of
 * one would leave every later prompt of the bridge waiting for good.
 */
import * as fs from "node:fs";
import { afterEach, expect, it, vi } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { Session } from "../../src/agent/session.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { lockPathOf } from "../../src/agent/store/log-format.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import type { RuntimeOptions } from "../../src/agent/runtime-options.js";
import { lockLetGo } from "../support/session-locks.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-turn-start-throws");
const script: Script = { turns: [{ steps: [{ text: "one" }] }, { steps: [{ text: "two" }] }, { steps: [{ text: "three" }] }] };
const text = (t: string) => [{ type: "text" as const, text: t }];
/** A prompt's outcome, a synchronous throw included. */
const outcome = (run: () => Promise<unknown>) => Promise.resolve().then(run).then((reason) => ({ reason }), (error: Error) => ({ error: error.message }));
/** Fails the test instead of waiting for good. */
const within = <T>(promise: Promise<T>, ms = 5_000) => Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms))]);

afterEach(() => vi.restoreAllMocks());

function runtime(more: Partial<RuntimeOptions> = {}) {
  const store = new SessionStore(each.root, each.ws.dir);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "read-only",
    tools: [], subagentDepth: 1, store, logger: silentLogger, maxRunningTurns: 1,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
    ...more,
  });
  return { rt, store };
}

it("a turn whose tracer throws before its first await answers that error, and lets go of the session's lock and its slot", async () => {
  let broken = true;
  const tracer = {
    turn: () => {
      if (broken) throw new Error("the tracer broke");
      return undefined;
    },
  } as unknown as RuntimeOptions["tracer"];
  const { rt, store } = runtime({ tracer });
  expect(await outcome(() => rt.prompt("s", text("go")))).toEqual({ error: "the tracer broke" });
  await lockLetGo(lockPathOf(store.pathOf("s")));
  broken = false;
  // The bound is one running turn: a slot kept by the failed turn would leave these waiting.
  expect(await within(rt.prompt("s", text("again")))).toEqual({ kind: "completed" });
  expect(await within(rt.prompt("other", text("go")))).toEqual({ kind: "completed" });
});

it("a session whose log the Session refuses closes the log: its lock goes at once, and the next prompt takes it up again", async () => {
  const first = runtime();
  expect(await first.rt.prompt("s", text("go"))).toEqual({ kind: "completed" });
  first.rt.closeAll();
  const { rt, store } = runtime();
  const absorb = vi.spyOn(Session.prototype as unknown as { absorb(event: unknown): void }, "absorb").mockImplementationOnce(() => {
    throw new Error("an event this version cannot take up");
  });
  expect(await outcome(() => rt.prompt("s", text("again")))).toEqual({ error: "an event this version cannot take up" });
  expect(absorb).toHaveBeenCalled();
  expect(fs.existsSync(lockPathOf(store.pathOf("s")))).toBe(false);
  expect(await within(rt.prompt("s", text("again")))).toEqual({ kind: "completed" });
});

it("a compaction whose tools' listing throws answers that error, and lets go of the session's lock", async () => {
  const first = runtime();
  expect(await first.rt.prompt("s", text("go"))).toEqual({ kind: "completed" });
  first.rt.closeAll();
  let broken = true;
  const moreTools = () => {
    if (broken) throw new Error("the listing broke");
    return Promise.resolve([]);
  };
  const { rt, store } = runtime({ moreTools });
  expect(await outcome(() => rt.compact("s"))).toEqual({ error: "the listing broke" });
  await lockLetGo(lockPathOf(store.pathOf("s")));
  broken = false;
  expect(await within(rt.prompt("s", text("again")))).toEqual({ kind: "completed" });
});
