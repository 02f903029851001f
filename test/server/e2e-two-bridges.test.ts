/**
 * Two bridge processes on one session root and workspace (two terminals, two SDK processes on
 * one project), against the built binary: one writer per session (docs/guarantees.md, "Two
 * processes on one session root"). While A writes a session, B's prompt, delete, fork and
 * compact of it are -32001 `session-locked` and its list and read work; once A's turn ended B
 * takes the session over with A's turns in it, also when B prompts the moment A's response is
 * read; prompts racing in a loop never corrupt the log nor lose an `ok` turn; two bridges each
 * taking the session the other just used, or one while the other loads a long log, are not refused; a bridge killed with SIGKILL does not keep the session from the next.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore, workspaceFolderName } from "../../src/agent/store/index.js";
import { wholeJsonLines } from "../support/json-lines.js";
import { RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { lockLetGo } from "../support/session-locks.js";
import { lockPathOf } from "../../src/agent/store/log-format.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-two-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-two-root-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const lookup = { name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: {} }, readOnly: true };

async function bridge(script: object): Promise<RawClient> {
  const c = new RawClient({ args: ["--stdio", "--session-root", root] });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script as any), { clientTools: [lookup] }));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

let nextId = 0;
function send(c: RawClient, method: string, params?: object): Promise<Frame> {
  const id = `r${++nextId}`;
  c.request(id, method, params);
  return c.response(id, 60_000);
}

const logFile = (sessionId: string) => path.join(root, workspaceFolderName(ws.dir), `${sessionId}.jsonl`);

/** Every line of a log parsed (a torn one fails the test), the header first. */
const logLines = (sessionId: string): any[] => wholeJsonLines(logFile(sessionId));

/** Seqs grow along the log (live-only events such as chunks take seqs the log never holds). */
function expectIncreasingSeqs(lines: any[]): void {
  const seqs = lines.slice(1).map((e) => e.seq);
  for (let i = 1; i < seqs.length; i++) expect(seqs[i], `seq at line ${i + 2}`).toBeGreaterThan(seqs[i - 1]);
}

function expectLocked(frame: Frame, sessionId: string): void {
  expect(frame.error, JSON.stringify(frame)).toMatchObject({ code: -32001, data: { kind: "session-locked", sessionId } });
  expect(frame.error?.message).toContain("another bridge");
}

describe("two bridges on one session root", () => {
  it("while A's turn writes a session, B's prompt, delete, fork and compact are session-locked, list and read work; after it, B takes the session with A's turns", async () => {
    const script = turns([{ toolCalls: [{ id: "c1", name: "lookup" }] }, { text: "A's answer" }], [{ text: "B's answer" }], [{ text: "A's second answer" }]);
    const a = await bridge(script);
    const b = await bridge(script);
    const aPrompt = send(a, "session/prompt", promptParams("s", "from A"));
    await a.waitFrame((f) => f.params?.event?.type === "tool/request", "A's tool/request");

    expectLocked(await send(b, "session/prompt", promptParams("s", "from B")), "s");
    expectLocked(await send(b, "session/delete", { sessionId: "s" }), "s");
    expectLocked(await send(b, "session/fork", { sessionId: "s", newSessionId: "s-fork" }), "s");
    expectLocked(await send(b, "session/compact", { sessionId: "s" }), "s");
    expect(fs.existsSync(logFile("s-fork"))).toBe(false);
    // Reads take no lock.
    const listed = await send(b, "session/list", {});
    expect(listed.result.sessions.map((e: any) => e.sessionId)).toEqual(["s"]);
    const read = await send(b, "session/read", { sessionId: "s" });
    expect(read.result.events.map((e: any) => e.type)).toContain("tool/request");

    a.request("answer", "session/tool_result", { sessionId: "s", callId: "c1", content: [{ type: "text", text: "found" }] });
    expect((await aPrompt).result).toEqual({ status: "ok", reason: { kind: "completed" } });

    // A is idle now: B takes the session over, and its history holds A's turn.
    const bPrompt = await send(b, "session/prompt", promptParams("s", "from B"));
    expect(bPrompt.result?.status).toBe("ok");
    const users = logLines("s").filter((e) => e.type === "user/message").map((e) => e.data.content[0].text);
    expect(users).toEqual(["from A", "from B"]);
    // And A, whose loaded copy is stale now, reloads it for its next turn instead of writing over B's.
    const again = await send(a, "session/prompt", promptParams("s", "A again"));
    expect(again.result?.status).toBe("ok");
    const lines = logLines("s");
    expect(lines.filter((e) => e.type === "turn/end").map((e) => e.data.turn)).toEqual([1, 2, 3]);
    expectIncreasingSeqs(lines);
    // A fork and a delete go through once nobody writes the session.
    expect((await send(b, "session/fork", { sessionId: "s", newSessionId: "s-fork" })).result).toEqual({ sessionId: "s-fork" });
    expect((await send(b, "session/delete", { sessionId: "s-fork" })).result).toEqual({ deleted: true });
  });

  it("prompts of both bridges racing on one session, 10 rounds: every line whole, every ok turn in the log, the loser session-locked", async () => {
    const script = turns([{ text: "a slow answer", chunkSize: 2, delayMs: 2 }]);
    const a = await bridge(script);
    const b = await bridge(script);
    let oks = 0;
    let locked = 0;
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all([send(a, "session/prompt", promptParams("race", `A${round}`)), send(b, "session/prompt", promptParams("race", `B${round}`))]);
      for (const frame of answers) {
        if (frame.error) {
          expectLocked(frame, "race");
          locked += 1;
        } else {
          expect(frame.result.status).toBe("ok");
          oks += 1;
        }
      }
    }
    const lines = logLines("race");
    expect(lines[0].type).toBe("session-header");
    const ends = lines.filter((e) => e.type === "turn/end");
    expect(ends).toHaveLength(oks);
    expect(ends.map((e) => e.data.turn)).toEqual(ends.map((_, i) => i + 1));
    expectIncreasingSeqs(lines);
    expect(oks + locked).toBe(20);
    expect(oks).toBeGreaterThanOrEqual(10); // each round, one at least
    // Both bridges still serve the session, and a third reads it whole.
    const c = await bridge(script);
    const read = await send(c, "session/read", { sessionId: "race", limit: 1000 });
    expect(read.result.events.filter((e: any) => e.type === "turn/end")).toHaveLength(oks);
  });

  it("a session handed back and forth, each prompt sent the moment the other bridge's response is read, 30 turns: every turn is ok, the next bridge waiting out the lock the last one keeps a moment", async () => {
    const script = turns(...Array.from({ length: 30 }, (_, i) => [{ text: `answer ${i + 1}` }]));
    const bridges = [await bridge(script), await bridge(script)];
    const lock = lockPathOf(logFile("s"));
    for (let turn = 0; turn < 30; turn++) {
      const answering = bridges[turn % 2]!;
      const answer = await send(answering, "session/prompt", promptParams("s", `turn ${turn + 1}`));
      // The turn is over for the client. The lock, if still there, is the answering bridge's
      // (it lingers: store/lock.ts), and the other bridge's prompt next waits it out, not refused.
      let holder: number | undefined;
      try {
        holder = JSON.parse(fs.readFileSync(lock, "utf8")).pid;
      } catch {
        // gone (let go, maybe while read)
      }
      expect([undefined, answering.child.pid], `the lock after turn ${turn + 1}'s response`).toContain(holder);
      expect(answer.result, `turn ${turn + 1}`).toEqual({ status: "ok", reason: { kind: "completed" } });
    }
    const lines = logLines("s");
    expect(lines.filter((e) => e.type === "turn/end").map((e) => e.data.turn)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expectIncreasingSeqs(lines);
  });

  it("two bridges each prompting, the moment its own turn ended, the session the other one just answered, 10 rounds: every turn is ok, neither waits on the other's kept lock while keeping its own", async () => {
    const rounds = 10;
    const script = turns(...Array.from({ length: 2 * rounds }, (_, i) => [{ text: `answer ${i + 1}` }]));
    const [a, b] = [await bridge(script), await bridge(script)];
    const statusOf = (frame: Frame) => frame.result?.status ?? frame.error?.data?.kind ?? JSON.stringify(frame.error);
    for (let round = 1; round <= rounds; round++) {
      // A's s and B's t end together; each then wants the other's, which the other keeps a
      // moment (store/lock.ts LOCK_LINGER_MS) while it waits, blocked, for its own next one.
      const [crossA, crossB] = await Promise.all([
        send(a, "session/prompt", promptParams(`s${round}`, "A first")).then(() => send(a, "session/prompt", promptParams(`t${round}`, "A second"))),
        send(b, "session/prompt", promptParams(`t${round}`, "B first")).then(() => send(b, "session/prompt", promptParams(`s${round}`, "B second"))),
      ]);
      expect([statusOf(crossA), statusOf(crossB)], `round ${round}`).toEqual(["ok", "ok"]);
    }
  });

  it("A keeps a session's lock a moment after its turn, then loads a long log for another prompt: B's prompt of the first session meanwhile is not refused", async () => {
    // A 40 MB log, which takes a bridge longer to load (synchronously) than B waits (LOCK_WAIT_MS).
    const store = new SessionStore(root, ws.dir);
    const long = store.open("long", { provider: "scripted", model: "demo" });
    long.lock();
    const text = "y".repeat(10_000);
    for (let seq = 1; seq <= 4000; seq++) long.append({ type: "user/message", seq, time: 1, data: { id: `u${seq}`, content: [{ type: "text", text }] } } as any);
    long.unlock();
    long.close();
    const script = turns([{ text: "one" }], [{ text: "two" }], [{ text: "three" }]);
    const [a, b] = [await bridge(script), await bridge(script)];
    expect((await send(a, "session/prompt", promptParams("s", "A's"))).result?.status).toBe("ok");
    const [, fromB] = await Promise.all([send(a, "session/prompt", promptParams("long", "A's next")), send(b, "session/prompt", promptParams("s", "B's"))]);
    expect(fromB.result ?? fromB.error).toEqual({ status: "ok", reason: { kind: "completed" } });
  });

  it("B lists a session A has loaded and wrote since its last listing with every turn, and after A's shutdown the same", async () => {
    const script = turns([{ text: "one" }], [{ text: "two" }], [{ text: "three" }]);
    const a = await bridge(script);
    const b = await bridge(script);
    expect((await send(a, "session/prompt", promptParams("s", "first question"))).result?.status).toBe("ok");
    const listed = async () => (await send(b, "session/list", {})).result.sessions;
    expect(await listed()).toMatchObject([{ sessionId: "s", title: "first question", turns: 1 }]);
    // A's next turns make whatever B's listing found (or wrote) stale: B reads them from the log.
    expect((await send(a, "session/prompt", promptParams("s", "second"))).result?.status).toBe("ok");
    expect(await listed()).toMatchObject([{ sessionId: "s", title: "first question", turns: 2 }]);
    expect((await send(a, "session/prompt", promptParams("s", "third"))).result?.status).toBe("ok");
    const live = (await send(a, "session/list", {})).result.sessions;
    expect(await listed()).toEqual(live);
    a.request("bye", "shutdown", {});
    await a.response("bye");
    await a.exit();
    expect(await listed()).toEqual(live);
    // A's locks were links to its owner file (store/lock.ts); it removed that file at exit.
    expect(fs.readdirSync(path.dirname(logFile("s"))).sort()).toEqual(["s.jsonl", "s.meta.json"]);
  });

  it("a bridge killed with SIGKILL mid-turn leaves a stale lock the next bridge takes over at once", async () => {
    const script = turns([{ toolCalls: [{ id: "k", name: "lookup" }] }, { text: "never" }], [{ text: "after the kill" }]);
    const a = await bridge(script);
    a.request("p", "session/prompt", promptParams("s", "one"));
    await a.waitFrame((f) => f.params?.event?.type === "tool/request", "A's tool/request");
    const lock = lockPathOf(logFile("s"));
    expect(JSON.parse(fs.readFileSync(lock, "utf8"))).toMatchObject({ pid: expect.any(Number) });
    a.kill("SIGKILL");
    await a.exit();
    expect(fs.existsSync(lock)).toBe(true);

    const b = await bridge(script);
    const answer = await send(b, "session/prompt", promptParams("s", "two"));
    expect(answer.result).toEqual({ status: "ok", reason: { kind: "completed" } });
    // B lets go of the lock a moment after its turn ended.
    await lockLetGo(lock);
    b.request("bye", "shutdown", {});
    await b.response("bye");
    await b.exit();
    expect(logLines("s").filter((e) => e.type === "user/message")).toHaveLength(2);
  });
});
