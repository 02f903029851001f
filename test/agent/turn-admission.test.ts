/** turn-admission.ts: the bound on running turns, its order, cancellation while waiting, and the default from the open-file limit. */
import { describe, expect, it } from "vitest";
import { OutOfDescriptorsError, TurnAdmission, defaultTurnLimit } from "../../src/agent/turn-admission.js";

const emfile = () => Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });

describe("TurnAdmission", () => {
  it("runs at most `limit` turns and admits the waiting ones in order as turns end", async () => {
    const gate = new TurnAdmission(2);
    expect(gate.tryEnter()).toBe(true);
    expect(gate.tryEnter()).toBe(true);
    expect(gate.tryEnter()).toBe(false);
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) => gate.enter(new AbortController().signal).then((ok) => ok && order.push(n)));
    expect(gate.counts).toEqual({ running: 2, waiting: 3 });
    // A free slot never lets a newcomer pass the queue.
    gate.leave();
    expect(gate.tryEnter()).toBe(false);
    gate.leave();
    gate.leave();
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
    expect(gate.counts).toEqual({ running: 2, waiting: 0 });
  });

  it("a waiting turn cancelled stops waiting, holds no slot, and the others keep their order", async () => {
    const gate = new TurnAdmission(1);
    expect(gate.tryEnter()).toBe(true);
    const cancel = new AbortController();
    const first = gate.enter(cancel.signal);
    const second = gate.enter(new AbortController().signal);
    cancel.abort();
    expect(await first).toBe(false);
    expect(gate.counts).toEqual({ running: 1, waiting: 1 });
    gate.leave();
    expect(await second).toBe(true);
    const aborted = new AbortController();
    aborted.abort();
    expect(await gate.enter(aborted.signal)).toBe(false);
  });

  it("withDescriptors retries an open that ran out of descriptors once a turn ends, and passes other failures through", async () => {
    const gate = new TurnAdmission(4);
    gate.tryEnter(); // the turn opening its session
    gate.tryEnter(); // another turn, running: its end frees descriptors
    let tries = 0;
    const opened = gate.withDescriptors("s", () => {
      if (++tries < 2) throw emfile();
      return "open";
    }, new AbortController().signal);
    gate.leave();
    expect(await opened).toBe("open");
    expect(tries).toBe(2);
    await expect(gate.withDescriptors("s", () => { throw new Error("corrupt"); }, new AbortController().signal)).rejects.toThrow("corrupt");
    gate.tryEnter(); // another turn again, so that the open below waits
    const cancel = new AbortController();
    const waiting = gate.withDescriptors("s", () => { throw emfile(); }, cancel.signal);
    cancel.abort();
    expect(await waiting).toBeUndefined();
    expect(new OutOfDescriptorsError("s").message).toMatch(/out of file descriptors.*retry later/);
  });

  it("withDescriptors fails at once, naming the limit, when nothing running could free a descriptor", async () => {
    const gate = new TurnAdmission(4);
    gate.tryEnter(); // the turn opening its session, alone
    let tries = 0;
    const alone = gate.withDescriptors("s", () => { tries++; throw emfile(); }, new AbortController().signal);
    const error = await alone.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OutOfDescriptorsError);
    expect((error as Error).message).toMatch(/out of file descriptors.*nothing running that could free one.*ulimit -n/);
    expect(tries).toBe(1);

    // Two turns that each wait to open their session free nothing for each other: both fail
    // (each leaving its slot, as the runtime does), not after the whole wait.
    gate.tryEnter();
    const fails = (id: string) =>
      gate.withDescriptors(id, () => { throw emfile(); }, new AbortController().signal).catch((e: Error) => {
        gate.leave();
        return e.message;
      });
    const both = await Promise.all([fails("a"), fails("b")]);
    expect(both).toEqual([expect.stringMatching(/nothing running/), expect.stringMatching(/nothing running/)]);
  });

  it("withDescriptors waits while a call beside the turns runs, or the system's table (ENFILE) is full", async () => {
    const gate = new TurnAdmission(4);
    gate.tryEnter();
    let busy = true;
    let tries = 0;
    const opened = gate.withDescriptors("s", () => {
      if (++tries < 3) throw emfile();
      return "open";
    }, new AbortController().signal, () => busy);
    expect(await opened).toBe("open");
    busy = false;
    tries = 0;
    const enfile = () => Object.assign(new Error("ENFILE: file table overflow"), { code: "ENFILE" });
    const system = gate.withDescriptors("s", () => {
      if (++tries < 3) throw enfile();
      return "open";
    }, new AbortController().signal);
    expect(await system).toBe("open");
    // The compaction ends meanwhile: the next try finds nothing that could free one.
    busy = true;
    tries = 0;
    const ends = gate.withDescriptors("s", () => {
      if (++tries === 2) busy = false;
      throw emfile();
    }, new AbortController().signal, () => busy);
    await expect(ends).rejects.toThrow(/nothing running/);
    expect(tries).toBe(2);
  });

  it("the default bound follows the open-file limit, and HARNESS_MAX_RUNNING_TURNS overrides it", () => {
    expect(defaultTurnLimit({}, 256)).toBe(24);
    expect(defaultTurnLimit({}, 1024)).toBe(120);
    expect(defaultTurnLimit({}, 64)).toBe(4);
    expect(defaultTurnLimit({}, 1_048_576)).toBe(1024);
    expect(defaultTurnLimit({}, undefined)).toBe(1024);
    expect(defaultTurnLimit({ HARNESS_MAX_RUNNING_TURNS: "7" }, 256)).toBe(7);
    expect(defaultTurnLimit({ HARNESS_MAX_RUNNING_TURNS: "0" }, 256)).toBe(24);
    expect(defaultTurnLimit({ HARNESS_MAX_RUNNING_TURNS: "many" }, 256)).toBe(24);
  });
});
