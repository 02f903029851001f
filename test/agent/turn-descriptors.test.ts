/**
 * A prompt whose session cannot be opened for want of descriptors (runtime.ts, turn-admission.ts
 * `withDescriptors`): it waits while something the bridge runs could free one (another turn),
 * and is answered at once, naming the open-file limit, when nothing could: no wait that no
 * descriptor can end.
 */
import { expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { OutOfDescriptorsError } from "../../src/agent/turn-admission.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider } from "../../src/providers/scripted.js";
import type { ModelProvider, ModelRequest } from "../../src/providers/types.js";
import { turns, workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-turn-fd");

/** A store whose opens fail EMFILE while `starved` is set, counting them. */
class StarvedStore extends SessionStore {
  starved = false;
  opens = 0;
  override open(...args: Parameters<SessionStore["open"]>) {
    this.opens++;
    if (this.starved) throw Object.assign(new Error("EMFILE: too many open files, open"), { code: "EMFILE" });
    return super.open(...args);
  }
}

function runtime(store: SessionStore, gate: Promise<void>): AgentRuntime {
  const inner = new ScriptedProvider(turns([{ text: "one" }], [{ text: "two" }]));
  const provider: ModelProvider = {
    name: "scripted",
    async *stream(request: ModelRequest, signal: AbortSignal) {
      await gate;
      yield* inner.stream(request, signal);
    },
  };
  return new AgentRuntime({
    workspace: each.ws.dir, provider, model: "test-script", system: "test", maxSteps: 2, permissionMode: "workspace-write",
    tools: [], subagentDepth: 0, store, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
}

const text = (t: string) => [{ type: "text" as const, text: t }];

it("alone, a prompt that cannot open its session is answered at once, naming the limit", async () => {
  const store = new StarvedStore(each.root, each.ws.dir);
  store.starved = true;
  const rt = runtime(store, Promise.resolve());
  const error = await rt.prompt("s1", text("hi")).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(OutOfDescriptorsError);
  expect((error as OutOfDescriptorsError).waited).toBe(false);
  expect((error as Error).message).toMatch(/nothing running that could free one.*ulimit -n/);
  expect(store.opens).toBe(2); // the prompt's open, and one try more: no retries for a minute
  // Nothing was left running: once descriptors are there, the session works.
  store.starved = false;
  expect((await rt.prompt("s1", text("hi"))).kind).toBe("completed");
});

it("while another turn runs, the prompt waits for it to end and then starts", async () => {
  const store = new StarvedStore(each.root, each.ws.dir);
  let release!: () => void;
  const rt = runtime(store, new Promise<void>((r) => (release = r)));
  const first = rt.prompt("a", text("hi"));
  store.starved = true;
  const second = rt.prompt("b", text("hi"));
  await new Promise((r) => setTimeout(r, 50));
  expect(store.opens).toBeGreaterThanOrEqual(3);
  store.starved = false;
  release();
  expect((await first).kind).toBe("completed");
  expect((await second).kind).toBe("completed");
});

/** A store with room for `room` open logs: one more open fails EMFILE, as the open-file limit makes it. */
class CrampedStore extends SessionStore {
  logsOpen = 0;
  constructor(root: string, workspace: string, private readonly room: number) {
    super(root, workspace);
  }
  override open(...args: Parameters<SessionStore["open"]>) {
    if (this.logsOpen >= this.room) throw Object.assign(new Error("EMFILE: too many open files, open"), { code: "EMFILE" });
    const log = super.open(...args);
    this.logsOpen++;
    const close = log.close.bind(log);
    log.close = () => {
      this.logsOpen--;
      close();
    };
    return log;
  }
}

it("idle sessions' logs are closed to make room: a new session runs, and a closed one resumes where it was", async () => {
  const store = new CrampedStore(each.root, each.ws.dir, 2);
  const rt = new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(turns([{ text: "one" }], [{ text: "two" }], [{ text: "three" }], [{ text: "four" }])),
    model: "test-script", system: "test", maxSteps: 2, permissionMode: "workspace-write", tools: [], subagentDepth: 0, store, logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
  expect((await rt.prompt("a", text("hi"))).kind).toBe("completed");
  expect((await rt.prompt("b", text("hi"))).kind).toBe("completed");
  // a and b are idle with their logs open, and the store has room for no third log.
  expect((await rt.prompt("c", text("hi"))).kind).toBe("completed");
  expect((await rt.prompt("a", text("again"))).kind).toBe("completed");
  const turnsOf = (id: string) => rt.catalog.read(id, undefined, 1000)!.events.filter((e) => e.type === "turn/end").map((e) => (e.data as { turn: number }).turn);
  expect(turnsOf("a")).toEqual([1, 2]);
  expect(turnsOf("c")).toEqual([1]);
  rt.closeAll();
});
