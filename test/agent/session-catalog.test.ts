/**
 * The store side of the sessions API on real files: paging a log far larger than the
 * bisection's window (lines of every size, one of several MiB, seq gaps, a torn tail) gives
 * exactly the events after each `afterSeq`; titles; fork cuts.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../src/agent/store/index.js";
import { readMeta, titleOf, writeMeta } from "../../src/agent/store/summary.js";
import type { SessionEvent } from "../../src/protocol/index.js";

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-catalog-"));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function toolResult(seq: number, size: number): SessionEvent {
  return { type: "tool/result", seq, time: 1_000 + seq, data: { callId: `c${seq}`, name: "bash", content: [{ type: "text", text: "x".repeat(size) }], isError: false, durationMs: 1 } };
}

describe("session/read on the file store", () => {
  it("pages exactly the events after any afterSeq, across lines of every size and a torn tail", () => {
    const store = new SessionStore(root, "/work/space");
    const log = store.open("big", { provider: "scripted", model: "demo" });
    const events: SessionEvent[] = [];
    let seq = 0;
    for (let i = 0; i < 600; i++) {
      seq += 1 + (i % 3); // gaps, as live-only events leave
      const size = i === 300 ? 3 * 1024 * 1024 : (i * 7919) % 2000;
      const event = toolResult(seq, size);
      events.push(event);
      log.append(event);
    }
    log.close();
    fs.appendFileSync(store.pathOf("big"), '{"type":"tool/result","seq":99999,"ti');
    for (const afterSeq of [undefined, 0, 1, 2, 3, 500, 601, 602, 603, seq - 1, seq, seq + 5]) {
      const expected = events.filter((e) => afterSeq === undefined || e.seq > afterSeq);
      const page = store.read("big", afterSeq, 7)!;
      expect(page.events.map((e) => e.seq)).toEqual(expected.slice(0, 7).map((e) => e.seq));
      expect(page.nextSeq).toBe(expected.length > 7 ? expected[6]!.seq : undefined);
    }
    // Paging through all of it gives every event once; the 3 MiB line ends a page by bytes only when it is not first.
    const seen: number[] = [];
    let after: number | undefined;
    for (;;) {
      const page = store.read("big", after, 1000)!;
      seen.push(...page.events.map((e) => e.seq));
      if (page.nextSeq === undefined) break;
      after = page.nextSeq;
    }
    expect(seen).toEqual(events.map((e) => e.seq));
    expect(store.read("nope", undefined, 10)).toBeUndefined();
  });
});

describe("titles", () => {
  it("collapse whitespace and cut at 80 code points with an ellipsis", () => {
    expect(titleOf([{ type: "text", text: "  a \n\t b  " }])).toBe("a b");
    expect(titleOf([{ type: "text", text: "one" }, { type: "text", text: "two" }])).toBe("one two");
    expect(titleOf([])).toBe("");
    const emoji = "😀".repeat(100);
    const cut = titleOf([{ type: "text", text: emoji }]);
    expect(Array.from(cut)).toHaveLength(80);
    expect(cut.endsWith("😀…")).toBe(true);
    expect(titleOf([{ type: "text", text: "y".repeat(10_000_000) }])).toHaveLength(80);
  });
});

describe("fork on the file store", () => {
  it("cuts before the next turn's user message and keeps the source untouched", () => {
    const store = new SessionStore(root, "/work/space");
    const log = store.open("src", { provider: "scripted", model: "demo" });
    let seq = 0;
    const ev = (type: string, data: object) => log.append({ type, seq: ++seq, time: seq, data } as SessionEvent);
    for (const turn of [1, 2, 3]) {
      ev("user/message", { id: `m${turn}`, content: [{ type: "text", text: `q${turn}` }] });
      ev("turn/start", { turn });
      ev("turn/end", { turn, reason: { kind: "completed" } });
    }
    log.close();
    const sourceBytes = fs.readFileSync(store.pathOf("src"));
    expect(store.fork("src", "at2", 2)).toBeUndefined();
    expect(store.read("at2", undefined, 100)!.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(store.fork("src", "at9", 9)).toEqual({ kind: "unknown-turn", turns: 3 });
    expect(store.fork("src", "at2", 1)).toEqual({ kind: "session-exists" });
    expect(store.fork("ghost", "x", 1)).toEqual({ kind: "unknown-session" });
    expect(fs.readFileSync(store.pathOf("src"))).toEqual(sourceBytes);
    const entry = store.list().sessions.find((s) => s.sessionId === "at2")!;
    expect(entry).toMatchObject({ title: "q1", turns: 2, parentSessionId: "src", origin: "fork" });
    const reopened = store.open("at2", { provider: "scripted", model: "demo" });
    expect(reopened.header.forkedFrom).toEqual({ sessionId: "src", turn: 2 });
    expect(reopened.loadedEvents).toHaveLength(6);
    reopened.close();
  });
});

describe("listing a log with lines that are JSON but not events", () => {
  // A log is a file anyone with the user's rights can edit, and a crash half-way through a
  // write leaves what it leaves: a line that parses to null, a number, an array, or an event
  // whose data has the wrong shape must cost the listing that line, never the session.
  it("lists the session with what its well-formed lines say, whatever the others hold", () => {
    const store = new SessionStore(root, "/work/space");
    const log = store.open("odd", { provider: "scripted", model: "demo" });
    log.close();
    const odd = [
      "null",
      "42",
      '"text"',
      "[1,2]",
      '{"type":"user/message","seq":1,"time":5,"data":null}',
      '{"type":"user/message","seq":2,"time":6,"data":{"content":5}}',
      '{"type":"user/message","seq":3,"time":7,"data":{"content":[null,{"type":"text","text":7},"x"]}}',
      '{"type":"turn/start","seq":4,"time":8,"data":{"turn":"nine"}}',
      '{"type":"turn/start","seq":5,"time":9}',
      '{"type":"user/message","seq":6,"time":"late","data":{"content":"hello"}}',
    ];
    const good = [
      { type: "turn/start", seq: 7, time: 10, data: { turn: 1 } },
      { type: "user/message", seq: 8, time: 11, data: { content: [{ type: "text", text: "fix the parser" }] } },
    ];
    fs.appendFileSync(store.pathOf("odd"), `${odd.join("\n")}\n${good.map((e) => JSON.stringify(e)).join("\n")}\n`);
    const listed = store.list();
    const entry = listed.sessions.find((s) => s.sessionId === "odd");
    expect(entry).toMatchObject({ sessionId: "odd", title: "fix the parser", turns: 1 });
    expect(Number.isFinite(entry!.updatedAt)).toBe(true); // the string time of one line did not become it
  });
});

describe("what a killed bridge leaves in the session folder", () => {
  const entry = { sessionId: "m", title: "a title", createdAt: 1, updatedAt: 2, turns: 1 };

  it("a meta is written under a name of its own: another writer's temporary, even one of this pid, is left alone", () => {
    const logFile = path.join(root, "m.jsonl");
    // Two listings (of two bridges, maybe with the same pid) rewrite one meta at once.
    const theirs = path.join(root, "m.meta.json.tmp");
    fs.writeFileSync(theirs, "half of another listing's meta");
    writeMeta(logFile, 123, entry);
    expect(readMeta(logFile, "m", 123)).toEqual(entry);
    expect(fs.readFileSync(theirs, "utf8")).toBe("half of another listing's meta");
    expect(fs.readdirSync(root).sort()).toEqual(["m.meta.json", "m.meta.json.tmp"]);
  });

  it("a meta's temporary a killed writer left is removed by a listing once an hour old; a young one is kept", () => {
    const store = new SessionStore(root, "/work/space");
    store.open("m", { provider: "scripted", model: "demo" }).close();
    const folder = path.dirname(store.pathOf("m"));
    const stale = path.join(folder, "m.meta.json.tmp-4242-0123456789ab");
    const young = path.join(folder, "m.meta.json.tmp-4242-0123456789ac");
    for (const file of [stale, young]) fs.writeFileSync(file, "{");
    const twoHours = new Date(Date.now() - 2 * 60 * 60 * 1000);
    fs.utimesSync(stale, twoHours, twoHours);
    expect(store.list().sessions.map((s) => s.sessionId)).toEqual(["m"]);
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(young)).toBe(true);
  });

  it("a killed bridge's owner file is removed by a listing once its process is gone; the rest are kept", () => {
    const store = new SessionStore(root, "/work/space");
    store.open("m", { provider: "scripted", model: "demo" }).close();
    const folder = path.dirname(store.pathOf("m"));
    const mine = fs.readdirSync(folder).filter((name) => name.startsWith("@owner-"));
    expect(mine).toHaveLength(1);
    const dead = spawnSync("true").pid; // exited and reaped: no such process now
    const line = (pid: number, host = os.hostname(), pidns = fs.readlinkSync("/proc/self/ns/pid")) => `${JSON.stringify({ pid, start: "", host, pidns })}\n`;
    const planted = {
      dead: ["@owner-1-0000abcd", line(dead)],
      halfOld: ["@owner-2-0000beef", "{"],
      halfYoung: ["@owner-3-0000cafe", "{"],
      elsewhere: ["@owner-4-0000f00d", line(dead, "another-host")],
      otherNamespace: ["@owner-5-0000d00d", line(dead, os.hostname(), "pid:[1]")],
    };
    for (const [name, text] of Object.values(planted)) fs.writeFileSync(path.join(folder, name), text, { mode: 0o600 });
    // The dead bridge's lock of another session stays a lock (taken over by whoever needs it).
    fs.linkSync(path.join(folder, planted.dead[0]), path.join(folder, "x.lock"));
    const aMinute = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(folder, planted.halfOld[0]), aMinute, aMinute);
    expect(store.list().sessions.map((s) => s.sessionId)).toEqual(["m"]);
    const left = fs.readdirSync(folder).filter((name) => name.startsWith("@owner-"));
    expect(left.sort()).toEqual([...mine, planted.halfYoung[0], planted.elsewhere[0], planted.otherNamespace[0]].sort());
    expect(fs.readFileSync(path.join(folder, "x.lock"), "utf8")).toBe(line(dead));
  });
});
