/**
 * The sessions API end to end against the built binary: session/list, session/read (paging),
 * session/fork (at a turn, then both sessions diverge and resume after a restart),
 * session/delete (busy → -32001), hostile ids and files planted in the session folder, and
 * what each does with --no-session-log.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { BINARY, RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-sessions-");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-sroot-"));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const SCRIPT = turns([{ text: "answer one" }], [{ text: "answer two" }], [{ text: "answer three" }], [{ text: "answer four" }], [{ text: "answer five" }]);

async function bridge(args = ["--stdio", "--session-root", root], script = SCRIPT): Promise<RawClient> {
  const c = new RawClient({ args });
  clients.push(c);
  c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script)));
  expect((await c.response("init")).error).toBeUndefined();
  return c;
}

let nextId = 0;
async function call(c: RawClient, method: string, params?: object): Promise<Frame> {
  const id = `r${++nextId}`;
  c.request(id, method, params);
  return c.response(id);
}

async function ok(c: RawClient, method: string, params?: object): Promise<any> {
  const frame = await call(c, method, params);
  expect(frame.error, `${method} ${JSON.stringify(params)}`).toBeUndefined();
  return frame.result;
}

async function prompt(c: RawClient, sessionId: string, text: string): Promise<void> {
  expect((await ok(c, "session/prompt", promptParams(sessionId, text))).status).toBe("ok");
}

/** Every durable event of a session, read page by page. */
async function readAll(c: RawClient, sessionId: string, limit: number): Promise<any[]> {
  const events: any[] = [];
  let afterSeq: number | undefined;
  for (;;) {
    const page = await ok(c, "session/read", { sessionId, limit, ...(afterSeq === undefined ? {} : { afterSeq }) });
    expect(page.events.length).toBeLessThanOrEqual(limit);
    events.push(...page.events);
    if (page.nextSeq === undefined) return events;
    expect(page.nextSeq).toBe(page.events.at(-1).seq);
    afterSeq = page.nextSeq;
  }
}

const userTexts = (events: any[]) => events.filter((e) => e.type === "user/message").map((e) => e.data.content[0].text);
const folder = () => path.join(root, workspaceFolderName(ws.dir));

describe("session/list and session/read", () => {
  it("lists this workspace's sessions newest first with titles and turns, and pages their durable events", async () => {
    const c = await bridge();
    await prompt(c, "alpha", "  Fix the\n\tparser:   it drops the last token of every line when the input ends without a newline, see issue 12");
    await prompt(c, "alpha", "and add a test");
    await prompt(c, "beta", "Rename the module");
    const listed = await ok(c, "session/list", {});
    const list = listed.sessions;
    expect(list.map((s: any) => s.sessionId)).toEqual(["beta", "alpha"]);
    // Where the logs are, so that a client need not work the folder's name out itself.
    expect(listed.logFolder).toBe(folder());
    expect(fs.existsSync(path.join(listed.logFolder, "alpha.jsonl"))).toBe(true);
    const alpha = list[1];
    expect(alpha.title).toBe("Fix the parser: it drops the last token of every line when the input ends witho…");
    expect(Array.from(alpha.title)).toHaveLength(80);
    expect(alpha.turns).toBe(2);
    expect(alpha.parentSessionId).toBeUndefined();
    expect(alpha.updatedAt).toBeGreaterThanOrEqual(alpha.createdAt);
    expect(list[0]).toMatchObject({ title: "Rename the module", turns: 1 });

    const streamed = c.events("alpha").filter((e) => e.type !== "assistant/chunk");
    expect(await readAll(c, "alpha", 1000)).toEqual(streamed);
    expect(await readAll(c, "alpha", 3)).toEqual(streamed);
    const last = streamed.at(-1);
    expect(await ok(c, "session/read", { sessionId: "alpha", afterSeq: last.seq })).toEqual({ events: [] });
    expect((await ok(c, "session/read", { sessionId: "alpha", afterSeq: streamed[2].seq, limit: 2 })).events).toEqual(streamed.slice(3, 5));

    for (const limit of [0, 1001, 1.5]) expect((await call(c, "session/read", { sessionId: "alpha", limit })).error?.code).toBe(-32602);
    expect((await call(c, "session/read", { sessionId: "alpha", afterSeq: -1 })).error?.code).toBe(-32602);
    const unknown = await call(c, "session/read", { sessionId: "nope" });
    expect(unknown.error).toMatchObject({ code: -32602, data: { kind: "unknown-session", sessionId: "nope" } });

    // Another process lists from the logs (their meta files), the same way.
    c.end();
    await c.exit();
    const again = await bridge();
    expect((await ok(again, "session/list", {})).sessions).toEqual(list);
    expect(await readAll(again, "alpha", 4)).toEqual(streamed);
  });

  it("lists subagent sessions with their parent and origin task", async () => {
    const script = {
      turns: [{ steps: [{ toolCalls: [{ id: "t1", name: "task", arguments: { prompt: "look around" } }] }, { text: "parent done" }] }],
      subagent: { turns: [{ steps: [{ text: "child says hi" }] }] },
    };
    const c = await bridge(undefined, script as never);
    await prompt(c, "parent", "delegate");
    const list = (await ok(c, "session/list", {})).sessions;
    const child = list.find((s: any) => s.sessionId !== "parent");
    expect(child).toMatchObject({ title: "look around", turns: 1, parentSessionId: "parent", origin: "task" });
    expect(child.sessionId).toMatch(/^parent\.task-[0-9a-f]{8}$/);
    expect(userTexts(await readAll(c, child.sessionId, 10))).toEqual(["look around"]);
  });

  it("a log whose meta is stale or missing (the bridge was killed mid-turn) is listed from the log itself", async () => {
    const c = await bridge();
    await prompt(c, "s1", "first");
    c.end();
    await c.exit();
    // As if a turn had run past its last meta write: an appended turn the meta does not know, and another log with no meta at all.
    const log = path.join(folder(), "s1.jsonl");
    const time = Date.now() + 1000;
    fs.appendFileSync(log, `${JSON.stringify({ type: "user/message", seq: 90, time, data: { id: "m", content: [{ type: "text", text: "second" }] } })}\n`);
    fs.appendFileSync(log, `${JSON.stringify({ type: "turn/start", seq: 91, time, data: { turn: 2 } })}\n{"type":"step/st`);
    fs.copyFileSync(log, path.join(folder(), "s2.jsonl"));
    const d = await bridge();
    const list = (await ok(d, "session/list", {})).sessions;
    expect(list.find((s: any) => s.sessionId === "s1")).toMatchObject({ title: "first", turns: 2, updatedAt: time });
    expect(list.find((s: any) => s.sessionId === "s2")).toMatchObject({ title: "first", turns: 2 });
  });
});

/** strace, where it is installed and may trace here (not through the arm64 emulator). */
const strace = process.env.HARNESS_TEST_BINARY ? undefined : ["/usr/bin/strace", "/bin/strace"].find((p) => fs.existsSync(p) && spawnSync(p, ["-qq", "-o", "/dev/null", "/bin/true"]).status === 0);

describe("session/fork", () => {
  it.skipIf(!strace)("(strace) syncs the session folder after the fork's log takes its name, before it answers", async () => {
    const trace = path.join(root, "trace");
    const c = new RawClient({ command: strace, args: ["-f", "-qq", "-y", "-e", "trace=rename,renameat,renameat2,fsync,write,writev", "-o", trace, BINARY, "--stdio", "--session-root", root] });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", SCRIPT)));
    expect((await c.response("init")).error).toBeUndefined();
    await prompt(c, "main", "one");
    expect(await ok(c, "session/fork", { sessionId: "main", newSessionId: "branch" })).toEqual({ sessionId: "branch" });
    await c.dispose();
    const lines = fs.readFileSync(trace, "utf8").split("\n");
    const folder = path.join(fs.realpathSync(root), workspaceFolderName(ws.dir));
    const renamed = lines.findIndex((l) => /rename/.test(l) && l.includes(`${folder}/branch.jsonl"`));
    expect(renamed, "the fork's rename is traced").toBeGreaterThan(0);
    const synced = lines.findIndex((l, i) => i > renamed && l.includes(`fsync(`) && l.includes(`<${folder}>`));
    const answered = lines.findIndex((l, i) => i > renamed && /\bwritev?\(1</.test(l)); // the fork's answer: the next frame
    expect(synced, "the folder's fsync after the rename").toBeGreaterThan(renamed);
    expect(answered, "the fork's answer").toBeGreaterThan(synced);
  });

  it("copies the history up to a turn into a new id; both go their own ways, and resume after a restart", async () => {
    const c = await bridge();
    await prompt(c, "main", "one");
    await prompt(c, "main", "two");
    await prompt(c, "main", "three");
    const before = await readAll(c, "main", 1000);
    expect(await ok(c, "session/fork", { sessionId: "main", newSessionId: "branch", turn: 1 })).toEqual({ sessionId: "branch" });
    const copied = await readAll(c, "branch", 1000);
    const endOfTurn1 = before.findIndex((e) => e.type === "turn/end" && e.data.turn === 1);
    expect(copied).toEqual(before.slice(0, endOfTurn1 + 1));

    await prompt(c, "branch", "two, differently");
    await prompt(c, "main", "four");
    const branch = c.events("branch").filter((e) => e.type === "turn/start");
    expect(branch.map((e) => e.data.turn)).toEqual([2]);
    expect(c.events("branch")[0]).toMatchObject({ type: "user/message", seq: copied.at(-1).seq + 1 });
    const list = (await ok(c, "session/list", {})).sessions;
    expect(list.map((s: any) => s.sessionId)).toEqual(["main", "branch"]);
    expect(list[1]).toMatchObject({ sessionId: "branch", title: "one", turns: 2, parentSessionId: "main", origin: "fork" });
    expect(list[0]).toMatchObject({ turns: 4 });

    // A fork without a turn copies everything.
    await ok(c, "session/fork", { sessionId: "branch", newSessionId: "twig" });
    expect(await readAll(c, "twig", 1000)).toEqual(await readAll(c, "branch", 1000));

    c.end();
    await c.exit();
    const d = await bridge();
    await prompt(d, "branch", "three, on the branch");
    await prompt(d, "main", "five");
    expect(userTexts(await readAll(d, "branch", 1000))).toEqual(["one", "two, differently", "three, on the branch"]);
    expect(userTexts(await readAll(d, "main", 1000))).toEqual(["one", "two", "three", "four", "five"]);
    expect(d.events("branch").find((e) => e.type === "turn/start").data.turn).toBe(3);
    const answer = d.events("branch").find((e) => e.type === "assistant/message");
    expect(answer.data.content).toEqual([{ type: "text", text: "answer three" }]);
  });

  it("refuses an existing newSessionId, an unknown session and a turn it does not have, each with its own -32602", async () => {
    const c = await bridge();
    await prompt(c, "a", "one");
    await prompt(c, "b", "one");
    const exists = await call(c, "session/fork", { sessionId: "a", newSessionId: "b" });
    expect(exists.error).toMatchObject({ code: -32602, data: { kind: "session-exists", sessionId: "b" } });
    expect(exists.error?.message).toContain("params.newSessionId");
    const self = await call(c, "session/fork", { sessionId: "a", newSessionId: "a" });
    expect(self.error?.data?.kind).toBe("session-exists");
    const unknown = await call(c, "session/fork", { sessionId: "ghost", newSessionId: "c" });
    expect(unknown.error).toMatchObject({ code: -32602, data: { kind: "unknown-session", sessionId: "ghost" } });
    const turn = await call(c, "session/fork", { sessionId: "a", newSessionId: "c", turn: 2 });
    expect(turn.error).toMatchObject({ code: -32602, data: { kind: "unknown-turn", turns: 1 } });
    expect(turn.error?.message).toContain("params.turn");
    for (const bad of [-1, 0.5, "1"]) expect((await call(c, "session/fork", { sessionId: "a", newSessionId: "c", turn: bad })).error?.code).toBe(-32602);
    expect(fs.existsSync(path.join(folder(), "c.jsonl"))).toBe(false);
    // Turn 0: a new session with the header only.
    await ok(c, "session/fork", { sessionId: "a", newSessionId: "empty", turn: 0 });
    expect(await ok(c, "session/read", { sessionId: "empty" })).toEqual({ events: [] });
  });
});

describe("session/delete", () => {
  it("refuses a busy session with -32001, deletes an idle one, which then is gone from the list and the disk", async () => {
    const script = turns([{ text: "done" }], [{ text: "thinking", hang: true }]);
    const c = await bridge(undefined, script);
    await prompt(c, "keep", "one");
    await prompt(c, "busy", "one");
    c.request("hang", "session/prompt", promptParams("busy", "two"));
    await c.waitFrame((f) => f.params?.event?.type === "assistant/chunk" && f.params.sessionId === "busy");
    const refused = await call(c, "session/delete", { sessionId: "busy" });
    expect(refused.error).toMatchObject({ code: -32001, data: { kind: "session-busy", sessionId: "busy" } });
    // Forking the running turn (or everything) waits for it; an earlier turn can be forked.
    expect((await call(c, "session/fork", { sessionId: "busy", newSessionId: "f1" })).error?.code).toBe(-32001);
    expect((await call(c, "session/fork", { sessionId: "busy", newSessionId: "f1", turn: 2 })).error?.code).toBe(-32001);
    await ok(c, "session/fork", { sessionId: "busy", newSessionId: "f1", turn: 1 });
    expect(await ok(c, "session/cancel", { sessionId: "busy" })).toEqual({ cancelled: true });

    expect(await ok(c, "session/delete", { sessionId: "busy" })).toEqual({ deleted: true });
    expect(fs.readdirSync(folder()).filter((n) => n.startsWith("busy"))).toEqual([]);
    expect((await ok(c, "session/list", {})).sessions.map((s: any) => s.sessionId).sort()).toEqual(["f1", "keep"]);
    expect((await call(c, "session/read", { sessionId: "busy" })).error?.data?.kind).toBe("unknown-session");
    expect(await ok(c, "session/delete", { sessionId: "busy" })).toEqual({ deleted: false });
    // The id is free again: a prompt starts a new session under it.
    await prompt(c, "busy", "afresh");
    expect(c.events("busy").filter((e) => e.type === "turn/start").at(-1).data.turn).toBe(1);
  });
});

describe("hostile ids and planted files", () => {
  it("refuses ids that are not session ids, and never follows, blocks on or deletes what is not a session log", async () => {
    const c = await bridge();
    await prompt(c, "real", "one");
    const outside = path.join(root, "outside.jsonl");
    fs.copyFileSync(path.join(folder(), "real.jsonl"), outside);
    const outsideBytes = fs.readFileSync(outside);
    fs.symlinkSync(outside, path.join(folder(), "link.jsonl"));
    fs.symlinkSync(path.join(root, "created-through-link.jsonl"), path.join(folder(), "dangling.jsonl"));
    fs.mkdirSync(path.join(folder(), "dir.jsonl"));
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [path.join(folder(), "fifo.jsonl")]);
    // A symlink under the temporary name the next meta write uses.
    const victim = path.join(root, "victim.txt");
    fs.writeFileSync(victim, "untouched");
    fs.symlinkSync(victim, path.join(folder(), "real.meta.json.tmp"));

    for (const id of ["../real", "/etc/passwd", "a\u0000b", "..", ".", "a/b", "x".repeat(129), "", "real.jsonl/.."]) {
      for (const [method, params] of [
        ["session/read", { sessionId: id }],
        ["session/delete", { sessionId: id }],
        ["session/fork", { sessionId: "real", newSessionId: id }],
        ["session/fork", { sessionId: id, newSessionId: "new" }],
      ] as const) {
        const frame = await call(c, method, params);
        expect(frame.error, `${method} ${JSON.stringify(params)}`).toMatchObject({ code: -32602, data: { kind: "invalid-params" } });
      }
    }
    expect((await ok(c, "session/list", {})).sessions.map((s: any) => s.sessionId)).toEqual(["real"]);
    for (const id of ["link", "dangling", "dir", "fifo"]) {
      expect((await call(c, "session/read", { sessionId: id })).error?.data?.kind, id).toBe("unknown-session");
      expect((await call(c, "session/fork", { sessionId: id, newSessionId: `${id}-copy` })).error?.data?.kind, id).toBe("unknown-session");
      expect(await ok(c, "session/delete", { sessionId: id }), id).toEqual({ deleted: false });
      // A fork never writes through a name that is taken, whatever it is.
      expect((await call(c, "session/fork", { sessionId: "real", newSessionId: id })).error?.data?.kind, id).toBe("session-exists");
    }
    await prompt(c, "real", "two"); // rewrites the meta at turn end
    expect((await ok(c, "session/list", {})).sessions).toMatchObject([{ sessionId: "real", turns: 2 }]);
    expect(fs.readFileSync(victim, "utf8")).toBe("untouched");
    // Prompts under those names are refused too, at once and without writing through them.
    for (const id of ["link", "dangling", "dir", "fifo"]) {
      const refused = await call(c, "session/prompt", promptParams(id, "hi"));
      expect(refused.error, id).toMatchObject({ code: -32603, data: { kind: "session-log" } });
      expect(refused.error?.message, id).toContain("not a regular file");
    }
    expect(fs.readFileSync(outside)).toEqual(outsideBytes);
    expect(fs.existsSync(path.join(root, "created-through-link.jsonl"))).toBe(false);
    expect(fs.lstatSync(path.join(folder(), "link.jsonl")).isSymbolicLink()).toBe(true);

    // A FIFO in place of a meta file: the next process lists the log from the log, without blocking.
    c.end();
    await c.exit();
    fs.rmSync(path.join(folder(), "real.meta.json"));
    execFileSync("mkfifo", [path.join(folder(), "real.meta.json")]);
    const d = await bridge();
    expect((await ok(d, "session/list", {})).sessions).toMatchObject([{ sessionId: "real", turns: 2 }]);
  });
});

describe("a symlinked workspace folder", () => {
  it("is refused with -32603 session-log by prompts and the sessions API alike; nothing is written where it points", async () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "hb-elsewhere-"));
    try {
      fs.chmodSync(elsewhere, 0o755);
      fs.mkdirSync(root, { recursive: true });
      fs.symlinkSync(elsewhere, folder());
      const c = await bridge();
      const refused = await call(c, "session/prompt", promptParams("s", "hi"));
      expect(refused.error).toMatchObject({ code: -32603, data: { kind: "session-log" } });
      expect(refused.error?.message).toContain("symlink");
      for (const [method, params] of [
        ["session/list", {}],
        ["session/read", { sessionId: "s" }],
        ["session/fork", { sessionId: "s", newSessionId: "t" }],
        ["session/delete", { sessionId: "s" }],
      ] as const) {
        expect((await call(c, method, params)).error, method).toMatchObject({ code: -32603, data: { kind: "session-log" } });
      }
      expect(fs.readdirSync(elsewhere)).toEqual([]);
      expect(fs.statSync(elsewhere).mode & 0o777).toBe(0o755);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe("--no-session-log", () => {
  it("answers from memory for the life of the process; a new process knows none of it", async () => {
    const c = await bridge(["--stdio", "--no-session-log"]);
    await prompt(c, "m", "one");
    await prompt(c, "m", "two");
    expect((await ok(c, "session/list", {})).sessions).toMatchObject([{ sessionId: "m", title: "one", turns: 2 }]);
    const streamed = c.events("m").filter((e) => e.type !== "assistant/chunk");
    expect(await readAll(c, "m", 2)).toEqual(streamed);
    await ok(c, "session/fork", { sessionId: "m", newSessionId: "f", turn: 1 });
    await prompt(c, "f", "other");
    expect(userTexts(await readAll(c, "f", 1000))).toEqual(["one", "other"]);
    expect(userTexts(await readAll(c, "m", 1000))).toEqual(["one", "two"]);
    expect(await ok(c, "session/delete", { sessionId: "m" })).toEqual({ deleted: true });
    expect((await ok(c, "session/list", {})).sessions.map((s: any) => s.sessionId)).toEqual(["f"]);
    c.end();
    await c.exit();
    const d = await bridge(["--stdio", "--no-session-log"]);
    expect(await ok(d, "session/list", {})).toEqual({ sessions: [] });
    expect((await call(d, "session/read", { sessionId: "f" })).error?.data?.kind).toBe("unknown-session");
  });
});
