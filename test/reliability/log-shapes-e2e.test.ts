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
