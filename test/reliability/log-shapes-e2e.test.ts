/**
 * End to end against the built binary: a session log is a file, and a line of it can be JSON
 * without being an event the history can hold (`null`, a number, an event whose data has
 * another shape, from a hand edit or a damaged disk). Resuming or reading such a session gets
 * the log's own specific error naming the file and the line's problem, never an internal
 * TypeError; the session still lists; other sessions and the process go on.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let root: string;
const clients: RawClient[] = [];
beforeEach(() => {
  ws = tempWorkspace();
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-shapes-"));
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

const header = (sessionId: string): string =>
  JSON.stringify({ type: "session-header", version: 1, sessionId, workspace: ws.dir, createdAt: 1, provider: "scripted", model: "demo" });
const hello = '{"type":"user/message","seq":1,"time":2,"data":{"content":[{"type":"text","text":"hello"}]}}';
const started = '{"type":"turn/start","seq":2,"time":3,"data":{"turn":1}}';

const deep = (n: number): string => `${"[".repeat(n)}${"]".repeat(n)}`;

/** Each damaged line, and what the error must say about it. */
const DAMAGED: Array<[string, string, RegExp]> = [
  ["null-line", "null", /JSON but not an event/],
  ["number-line", "42", /JSON but not an event/],
  ["array-line", "[1]", /JSON but not an event/],
  ["no-data", '{"type":"user/message","seq":3,"time":4,"data":null}', /user\/message event has no data/],
  ["steer-content-string", '{"type":"user/steer","seq":3,"time":4,"data":{"id":"m","content":"also lint"}}', /user\/steer event's data\.content is not a list of content blocks/],
  ["content-number", '{"type":"assistant/message","seq":3,"time":4,"data":{"content":7}}', /data\.content is not a list of content blocks/],
  ["null-block", '{"type":"tool/result","seq":3,"time":4,"data":{"callId":"c","name":"bash","content":[null],"isError":false}}', /data\.content\[0\] is not a content block/],
  ["bad-turn", '{"type":"turn/start","seq":3,"time":4,"data":{"turn":"two"}}', /data\.turn is not a turn number/],
  ["hook-continue", '{"type":"hook/decision","seq":3,"time":4,"data":{"hookId":"h","hook":"stop","continue":5}}', /data\.continue is not a string/],
  ["hook-no-id", '{"type":"hook/request","seq":3,"time":4,"data":{"hook":"stop"}}', /data\.hookId and data\.hook are not strings/],
  ["rewound-turn", '{"type":"session/rewound","seq":3,"time":4,"data":{"turn":"1"}}', /session\/rewound event's data\.turn is not a turn number/],
  // A post-tool request left waiting becomes its call's tool/result at the next turn: it must hold one.
  ["hook-post-tool-content", '{"type":"hook/request","seq":3,"time":4,"data":{"hookId":"h","hook":"post-tool","callId":"c","name":"bash","arguments":{},"content":"oops","isError":false}}', /data\.content is not a list of content blocks/],
  ["hook-post-tool-error", '{"type":"hook/request","seq":3,"time":4,"data":{"hookId":"h","hook":"post-tool","callId":"c","name":"bash","arguments":{},"content":[],"isError":"no"}}', /data\.isError is not a boolean/],
  ["hook-post-tool-call", '{"type":"hook/request","seq":3,"time":4,"data":{"hookId":"h","hook":"post-tool","name":"bash","arguments":{},"content":[],"isError":false}}', /data\.callId and data\.name are not strings/],
  ["no-seq", '{"type":"user/message","time":4,"data":{"content":[]}}', /no seq number/],
  // Past 2^53−1 a seq cannot grow by one (9007199254740993 parses as …992): such a log is damaged.
  ["seq-past-limit", '{"type":"turn/start","seq":9007199254740993,"time":4,"data":{"turn":1}}', /seq is past 2\^53−1 \(9007199254740991\)/],
  // JSON.parse takes any depth but JSON.stringify does not: such a line could be neither replayed
  // (a RangeError) nor read back (session/read left the request unanswered). Of a type the replay
  // ignores, and in a tool call's arguments, which the history measures by their JSON.
  ["deep-unknown", `{"type":"x/y","seq":3,"time":4,"data":${deep(100_000)}}`, /nested deeper than 512 levels/],
  ["deep-arguments", `{"type":"assistant/message","seq":3,"time":4,"data":{"turn":1,"step":1,"content":[{"type":"tool-call","id":"c","name":"read_file","arguments":{"path":${deep(20_000)}}}],"finishReason":"tool-calls"}}`, /nested deeper than 512 levels/],
];

describe("a session log holding a line that is no event", () => {
  it("answers each prompt and read of such a session with the log's error, lists it, and serves the rest", async () => {
    const dir = path.join(root, workspaceFolderName(ws.dir));
    fs.mkdirSync(dir, { recursive: true });
    for (const [id, line] of DAMAGED) fs.writeFileSync(path.join(dir, `${id}.jsonl`), `${header(id)}\n${hello}\n${line}\n${started}\n`);
    const c = new RawClient({ args: ["--stdio", "--session-root", root] });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, "demo"));
    expect((await c.response("init")).error).toBeUndefined();
    let n = 0;
    for (const [id, , problem] of DAMAGED) {
      for (const [method, params] of [["session/prompt", promptParams(id)], ["session/read", { sessionId: id }]] as const) {
        const rid = ++n;
        c.request(rid, method, params);
        const { error } = await c.response(rid);
        expect(error?.code, `${method} ${id}`).toBe(-32603);
        expect(error?.data?.kind, `${method} ${id}`).toBe("session-log");
        expect(error?.message).toContain(`${id}.jsonl`);
        expect(error?.message).toMatch(/corrupt at (line|byte) \d+/);
        expect(error?.message).toMatch(problem);
      }
    }
    // Untouched by it: the file (never rewritten), the listing, other sessions.
    for (const [id, line] of DAMAGED) expect(fs.readFileSync(path.join(dir, `${id}.jsonl`), "utf8")).toBe(`${header(id)}\n${hello}\n${line}\n${started}\n`);
    c.request("list", "session/list", {});
    const listed = (await c.response("list")).result.sessions as Array<{ sessionId: string; title: string }>;
    for (const [id] of DAMAGED) expect(listed.find((s) => s.sessionId === id)?.title, id).toBe("hello");
    c.request("fine", "session/prompt", promptParams("fine"));
    expect((await c.response("fine")).result.status).toBe("ok");
    expect(c.badLines).toEqual([]);
  });
});

describe("a session log whose seq has reached 2^53−1", () => {
  it("refuses a prompt with the log's error naming the file and the limit, never writes a repeated seq, and serves the rest", async () => {
    const dir = path.join(root, workspaceFolderName(ws.dir));
    fs.mkdirSync(dir, { recursive: true });
    const ended = (seq: number) => `{"type":"turn/end","seq":${seq},"time":5,"data":{"turn":1,"status":"ok"}}`;
    const fileOf = (id: string) => path.join(dir, `${id}.jsonl`);
    const seqsOf = (id: string) => fs.readFileSync(fileOf(id), "utf8").trim().split("\n").slice(1).map((line) => JSON.parse(line).seq as number);
    // "full": no seq left; "nearly": one left, which the next turn's first event takes.
    fs.writeFileSync(fileOf("full"), `${header("full")}\n${hello}\n${started}\n${ended(Number.MAX_SAFE_INTEGER)}\n`);
    fs.writeFileSync(fileOf("nearly"), `${header("nearly")}\n${hello}\n${started}\n${ended(Number.MAX_SAFE_INTEGER - 1)}\n`);
    const untouched = fs.readFileSync(fileOf("full"), "utf8");
    const c = new RawClient({ args: ["--stdio", "--session-root", root] });
    clients.push(c);
    c.request("init", "initialize", initParams(ws.dir, "demo"));
    expect((await c.response("init")).error).toBeUndefined();
    const prompt = async (rid: string, id: string) => {
      c.request(rid, "session/prompt", promptParams(id));
      const { error } = await c.response(rid);
      expect(error?.code, rid).toBe(-32603);
      expect(error?.message, rid).toContain(fileOf(id));
      expect(error?.message, rid).toContain("2^53−1 (9007199254740991)");
      return error?.data?.kind;
    };
    // Refused as the log is loaded: nothing written, the same again and again.
    expect(await prompt("full-1", "full")).toBe("session-log");
    expect(await prompt("full-2", "full")).toBe("session-log");
    expect(fs.readFileSync(fileOf("full"), "utf8")).toBe(untouched);
    // The last seq goes to the turn's first event; the turn ends before the next one is used
    // (a turn that failed: no turn/end), and so does every later turn of the loaded session.
    expect(await prompt("nearly-1", "nearly")).toBe("missing-turn-end");
    expect(await prompt("nearly-2", "nearly")).toBe("missing-turn-end");
    expect(seqsOf("nearly")).toEqual([1, 2, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER]);
    // Still readable, and the bridge serves the rest.
    c.request("read", "session/read", { sessionId: "full" });
    expect((await c.response("read")).result.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2, Number.MAX_SAFE_INTEGER]);
    c.request("fine", "session/prompt", promptParams("fine"));
    expect((await c.response("fine")).result.status).toBe("ok");
    expect(c.badLines).toEqual([]);
  });
});
