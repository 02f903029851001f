/**
 * A fork is whole before anyone can use it: its completion (the runtime copies the checkpoints
 * of the turns it took) runs before its log takes its name, and while the store still holds the
 * fork's lock, so another bridge can neither see it half-made nor prompt or fork into its id
 * meanwhile; a completion that fails takes what it made away again under that lock, and the same
 * fork can then be made whole. (A bridge killed meanwhile: fork-crash.test.ts.)
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemorySessionStore, SessionLockedError, SessionStore } from "../../src/agent/store/index.js";
import { checkpointsPathOf } from "../../src/agent/store/log-format.js";
import type { SessionCatalog, SessionStore as Store } from "../../src/agent/store/index.js";
import type { SessionEvent } from "../../src/protocol/index.js";

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-fork-complete-"));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A source session of two ended turns. */
function withSource<T extends SessionCatalog & { open: Store["open"] }>(store: T): T {
  const log = store.open("src", { provider: "scripted", model: "demo" });
  let seq = 0;
  for (const turn of [1, 2]) {
    log.append({ type: "user/message", seq: ++seq, time: seq, data: { id: `m${turn}`, content: [{ type: "text", text: `q${turn}` }] } } as SessionEvent);
    log.append({ type: "turn/start", seq: ++seq, time: seq, data: { turn } } as SessionEvent);
    log.append({ type: "turn/end", seq: ++seq, time: seq, data: { turn, reason: { kind: "completed" } } } as SessionEvent);
  }
  log.close();
  return store;
}

describe("a fork's completion on the file store", () => {
  it("runs before the fork's log has its name, while the fork is locked: another bridge neither sees it nor opens or forks into it until it is whole", () => {
    const store = withSource(new SessionStore(root, "/work/space"));
    const otherBridge = new SessionStore(root, "/work/space");
    let openDuring: unknown;
    let forkDuring: unknown;
    const refusal = store.fork("src", "copy", undefined, () => {
      expect(fs.existsSync(store.pathOf("copy"))).toBe(false);
      expect(otherBridge.list().sessions.map((s) => s.sessionId)).toEqual(["src"]);
      expect(otherBridge.read("copy", undefined, 10)).toBeUndefined();
      try {
        otherBridge.open("copy", { provider: "scripted", model: "demo" }).close();
      } catch (error) {
        openDuring = error;
      }
      try {
        otherBridge.fork("src", "copy", undefined);
      } catch (error) {
        forkDuring = error;
      }
    });
    expect(refusal).toBeUndefined();
    expect(openDuring).toBeInstanceOf(SessionLockedError);
    expect(forkDuring).toBeInstanceOf(SessionLockedError);
    // Its temporary is gone: the folder holds the two logs and their metas.
    expect(fs.readdirSync(path.dirname(store.pathOf("copy"))).filter((n) => !n.startsWith("@owner-")).sort()).toEqual(["copy.jsonl", "copy.meta.json", "src.jsonl", "src.meta.json"]);
    // Once made whole, it is anyone's.
    const opened = otherBridge.open("copy", { provider: "scripted", model: "demo" });
    expect(opened.loadedEvents).toHaveLength(6);
    opened.close();
  });

  it("that fails leaves no fork (no log, no listing, no checkpoints), passes the error on, and the same fork then goes through", () => {
    const store = withSource(new SessionStore(root, "/work/space"));
    const broken = new Error("the checkpoints could not be copied");
    expect(() =>
      store.fork("src", "copy", 1, () => {
        fs.mkdirSync(checkpointsPathOf(store.pathOf("copy")), { recursive: true });
        throw broken;
      }),
    ).toThrow(broken);
    expect(fs.existsSync(store.pathOf("copy"))).toBe(false);
    expect(fs.existsSync(checkpointsPathOf(store.pathOf("copy")))).toBe(false);
    expect(store.list().sessions.map((s) => s.sessionId)).toEqual(["src"]);
    expect(store.read("copy", undefined, 10)).toBeUndefined();
    // Its lock was let go: the retry is not refused, and the fork holds turn 1 only.
    expect(store.fork("src", "copy", 1, () => {})).toBeUndefined();
    expect(store.read("copy", undefined, 10)!.events.map((e) => e.type)).toEqual(["user/message", "turn/start", "turn/end"]);
  });
});

describe("a fork's completion on the memory store (--no-session-log)", () => {
  it("that fails leaves no fork, and the same fork then goes through", () => {
    const store = withSource(new MemorySessionStore("/work/space"));
    expect(() =>
      store.fork("src", "copy", undefined, () => {
        expect(store.read("copy", undefined, 10)).toBeDefined();
        throw new Error("no private folder");
      }),
    ).toThrow("no private folder");
    expect(store.read("copy", undefined, 10)).toBeUndefined();
    expect(store.fork("src", "copy", undefined, () => {})).toBeUndefined();
    expect(store.read("copy", undefined, 10)!.events).toHaveLength(6);
  });
});
