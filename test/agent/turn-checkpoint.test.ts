/**
 * The turn's checkpoint is made at the first tool call that may change the workspace
 * (src/agent/turn-checkpoint.ts): a turn without one makes no recorder and waits for nothing at
 * its end; a turn with one records through a single recorder, asked for once.
 */
import { describe, expect, it } from "vitest";
import { LazyTurnCheckpoint, type TurnCheckpoint } from "../../src/agent/turn-checkpoint.js";
import type { Session } from "../../src/agent/session.js";

function source(made: TurnCheckpoint | undefined) {
  const asked: number[] = [];
  const calls: string[] = [];
  const recorder = made && {
    beforeTool: (name: string, readOnly: boolean) => {
      calls.push(`${name}:${readOnly}`);
      return Promise.resolve();
    },
    finish: () => {
      calls.push("finish");
      return Promise.resolve();
    },
  };
  return { asked, calls, src: { forTurn: (turn: number) => (asked.push(turn), recorder) } };
}

const session = {} as Session;

describe("LazyTurnCheckpoint", () => {
  it("makes no recorder for read-only calls, and finishing then awaits nothing", () => {
    const { asked, calls, src } = source({} as TurnCheckpoint);
    const cp = new LazyTurnCheckpoint(src, 3);
    expect(cp.beforeTool("read_file", true, {})).toBeUndefined();
    expect(cp.finish(session)).toBeUndefined();
    expect(asked).toEqual([]);
    expect(calls).toEqual([]);
  });

  it("asks for the turn's recorder once, at the first changing call, and finishes through it", async () => {
    const { asked, calls, src } = source({} as TurnCheckpoint);
    const cp = new LazyTurnCheckpoint(src, 7);
    cp.beforeTool("read_file", true, {});
    await cp.beforeTool("write_file", false, { path: "a" });
    await cp.beforeTool("bash", false, { command: "true" });
    await cp.finish(session);
    expect(asked).toEqual([7]);
    expect(calls).toEqual(["write_file:false", "bash:false", "finish"]);
  });

  it("a turn that cannot be checkpointed asks once and runs without one", () => {
    const { asked, src } = source(undefined);
    const cp = new LazyTurnCheckpoint(src, 1);
    expect(cp.beforeTool("write_file", false, {})).toBeUndefined();
    expect(cp.beforeTool("bash", false, {})).toBeUndefined();
    expect(cp.finish(session)).toBeUndefined();
    expect(asked).toEqual([1]);
  });
});
