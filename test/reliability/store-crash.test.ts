/**
 * Crash durability of the session log, property-based: a process killed in the middle of an
 * append leaves some prefix of the bytes it meant to write, of a log closed or still open (the
 * spaces after its last line, log-tail.ts); after a power loss the unsynced end may also hold
 * zeros. For any such file, reopening
 *
 *  - never throws and never loses a whole line: it loads exactly the events whose lines (with
 *    their `\n`, or the last one's JSON with one of its spaces) survived — or starts afresh
 *    when not even the header did;
 *  - cuts the file back to its whole lines, so the next append starts on a clean line and a
 *    further reopen reads every event once, in order, with `seq` strictly increasing.
 *
 * (The specific torn-line cases are in test/agent/agent-loop.test.ts; this covers every byte.)
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../src/protocol/index.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { fuzzParams, fuzzRuns } from "./support/fuzz-frames.js";

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-store-crash-"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const textArb = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 30 }), fc.constantFrom("é😀中\u2028", "line\nbreak"));

/** Durable events of a plausible turn, seq 1.. */
const eventsArb = fc.array(textArb, { minLength: 0, maxLength: 12 }).map((texts): SessionEvent[] =>
  texts.map((t, i) =>
    i % 2 === 0
      ? ({ type: "user/message", seq: i + 1, time: 1_700_000_000_000 + i, data: { id: `u${i}`, content: [{ type: "text", text: t }] } } as SessionEvent)
      : ({
          type: "assistant/message",
          seq: i + 1,
          time: 1_700_000_000_000 + i,
          data: { id: `a${i}`, turn: 1, step: i, content: [{ type: "text", text: t }], finishReason: "stop" },
        } as SessionEvent),
  ),
);

let n = 0;

describe("the session log after a crash at any byte", () => {
  const runs = fuzzRuns(300, 0.01);
  it(`${runs} logs cut at a random byte (or zero-filled past it) reopen to their whole lines`, () => {
    fc.assert(
      fc.property(eventsArb, fc.double({ min: 0, max: 1, noNaN: true }), fc.nat({ max: 64 }), fc.boolean(), (events, where, zeros, open) => {
        const store = new SessionStore(root, `/work/space-${++n}`);
        const id = `s${n}`;
        const log = store.open(id, { provider: "scripted", model: "demo" });
        for (const e of events) log.append(e);
        log.sync();
        const file = store.pathOf(id);
        // `open`: killed with the log open, the spaces after its last line still there (log-tail.ts).
        const padded = fs.readFileSync(file);
        log.close();
        const full = open ? padded : fs.readFileSync(file);
        const cut = Math.floor(where * full.length);
        // The crash: a prefix survives, possibly followed by zeros (blocks allocated, never written).
        fs.writeFileSync(file, Buffer.concat([full.subarray(0, cut), Buffer.alloc(cut < full.length ? zeros : 0)]));

        // Which lines survived whole?
        const lineEnds: number[] = [];
        for (let i = 0; i < full.length; i++) if (full[i] === 0x0a) lineEnds.push(i + 1);
        // And a padded last line whose JSON and at least one of its spaces survived (resume.ts:
        // a power loss may keep the line but not its final "\n", which a longer line overwrote).
        const jsonKept = open && events.length > 0 && cut > full.lastIndexOf(0x7d) + 1;
        const whole = lineEnds.filter((end) => end <= cut).length + (jsonKept && cut < full.length ? 1 : 0);

        const reopened = store.open(id, { provider: "scripted", model: "demo" });
        const expected = whole === 0 ? [] : events.slice(0, whole - 1);
        expect(reopened.loadedEvents).toEqual(expected);
        expect(reopened.header.sessionId).toBe(id);
        const next = { type: "turn/start", seq: expected.length + 1, time: 1, data: { turn: 1 } } as SessionEvent;
        reopened.append(next);
        reopened.close();

        // The file is whole lines only, and a further reopen reads everything once, in order.
        const text = fs.readFileSync(file, "utf8");
        expect(text.endsWith("}\n")).toBe(true);
        const again = store.open(id, { provider: "scripted", model: "demo" });
        expect(again.loadedEvents).toEqual([...expected, next]);
        again.close();
        const seqs = again.loadedEvents.map((e) => e.seq);
        for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);
        fs.rmSync(file);
      }),
      fuzzParams(runs),
    );
    // Each case opens, writes, cuts and reopens a log on disk: the budget grows with the run
    // count, as the other fuzz tests' do, since a starved CPU stretches the same work far past
    // the default test timeout without anything being wrong.
  }, Math.max(60_000, runs * 200));
});
