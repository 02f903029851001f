/**
 * A storm of pipelined requests through one bridge, property-based: random sequences of
 * `session/prompt` and `session/cancel` over a few sessions, written back to back or with small
 * pauses, against turns that stream slowly, call a tool, or hang until cancelled. For every
 * sequence:
 *
 * - every request is answered exactly once, and nothing else is (no id-null errors, no ids
 *   nobody sent);
 * - a prompt is either refused busy (-32001, and then a turn of that session sent earlier was
 *   still in flight, and no turn was started for it) or runs exactly one turn: its events (its
 *   `user/message` carries the prompt's text) all precede its response, whose reason is the one
 *   in its `turn/end`;
 * - within a session, turns do not overlap: a turn's response precedes the next turn's
 *   `user/message`, and `seq` strictly increases;
 * - `cancelled: true` comes after the response of the turn it aborted; `cancelled: false`
 *   only when no turn of that session requested before it was still running;
 * - each session's durable log holds exactly the durable events that were announced.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { RawClient, initParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";
import { fuzzParams, fuzzRuns } from "./support/fuzz-frames.js";

let ws: TempWorkspace;
let root: string;
let c: RawClient;

beforeAll(async () => {
  ws = tempWorkspace("hb-storm-");
  ws.file("README.md", "# storm\n");
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-storm-root-"));
  const script = ws.script(
    "storm.json",
    turns(
      [{ text: "alpha beta gamma delta", chunkSize: 3, delayMs: 1 }],
      [{ text: "reading", toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] }, { text: "read it", chunkSize: 2, delayMs: 1 }],
      [{ text: "waiting for a cancel", chunkSize: 4, hang: true }],
    ),
  );
  c = new RawClient({ args: ["--stdio", "--session-root", root] });
  c.request("init", "initialize", initParams(ws.dir, script));
  expect((await c.response("init")).error).toBeUndefined();
});

afterAll(async () => {
  await c.dispose();
  ws.cleanup();
  fs.rmSync(root, { recursive: true, force: true });
});

type Op = { kind: "prompt" | "cancel"; session: number } | { kind: "pause"; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("prompt" as const), session: fc.integer({ min: 0, max: 2 }) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("cancel" as const), session: fc.integer({ min: 0, max: 2 }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("pause" as const), ms: fc.integer({ min: 0, max: 15 }) }), weight: 2 },
);

let caseNo = 0;

describe("a storm of pipelined prompts and cancels", () => {
  const runs = fuzzRuns(30, 0.002);
  it(`${runs} random sequences: each request answered once, turns never overlap, cancel and busy keep their promises`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 16 }), async (ops) => {
        const tag = `c${++caseNo}`;
        const sessions = [0, 1, 2].map((k) => `${tag}-s${k}`);
        const sent: Array<{ id: string; kind: "prompt" | "cancel"; session: string }> = [];
        let n = 0;
        const send = (kind: "prompt" | "cancel", session: string) => {
          const id = `${tag}-${kind}-${++n}`;
          sent.push({ id, kind, session });
          if (kind === "prompt") c.request(id, "session/prompt", { sessionId: session, contentBlocks: [{ type: "text", text: id }] });
          else c.request(id, "session/cancel", { sessionId: session });
        };
        for (const op of ops) {
          if (op.kind === "pause") await new Promise((r) => setTimeout(r, op.ms));
          else send(op.kind, sessions[op.session]);
        }
        // End every hanging turn.
        for (const s of sessions) send("cancel", s);
        const responses = new Map<string, Frame>();
        for (const r of sent) responses.set(r.id, await c.response(r.id, 30_000));

        const mine = c.frames.filter((f) => (typeof f.id === "string" && f.id.startsWith(`${tag}-`)) || f.params?.sessionId?.startsWith(`${tag}-`));
        const answers = mine.filter((f) => f.method === undefined);
        expect(answers.map((f) => f.id).sort()).toEqual(sent.map((r) => r.id).sort());
        const at = (f: Frame) => c.indexOf(f);

        for (const s of sessions) {
          const events = c.frames.filter((f) => f.method === "session.event" && f.params.sessionId === s);
          for (let i = 1; i < events.length; i++) expect(events[i].params.event.seq).toBeGreaterThan(events[i - 1].params.event.seq);
          const prompts = sent.filter((r) => r.kind === "prompt" && r.session === s);
          const accepted = prompts.filter((r) => responses.get(r.id)!.result !== undefined).sort((a, b) => at(responses.get(a.id)!) - at(responses.get(b.id)!));
          const turnEnds = events.filter((f) => f.params.event.type === "turn/end");
          expect(turnEnds).toHaveLength(accepted.length);

          accepted.forEach((p, k) => {
            const response = responses.get(p.id)!;
            const start = events.findIndex((f) => f.params.event.type === "user/message" && f.params.event.data.content[0].text === p.id);
            expect(start).toBeGreaterThanOrEqual(0);
            const end = events.findIndex((f, i) => i > start && f.params.event.type === "turn/end");
            expect(turnEnds[k]).toBe(events[end]);
            expect(at(events[end])).toBeLessThan(at(response));
            expect(response.result.reason).toEqual(events[end].params.event.data.reason);
            expect(response.result.status).toBe(response.result.reason.kind === "completed" ? "ok" : response.result.reason.kind === "aborted" ? "aborted" : "error");
            // The next turn starts only after this one was answered.
            const next = events.find((f, i) => i > end && f.params.event.type === "user/message");
            if (next) expect(at(response)).toBeLessThan(at(next));
          });

          for (const p of prompts.filter((r) => responses.get(r.id)!.error !== undefined)) {
            const busy = responses.get(p.id)!;
            expect(busy.error).toMatchObject({ code: -32001, data: { kind: "session-busy", sessionId: s } });
            expect(events.some((f) => f.params.event.type === "user/message" && f.params.event.data.content[0].text === p.id)).toBe(false);
            // A turn requested earlier was still running when this one was refused.
            const earlier = accepted.filter((a) => sent.indexOf(a) < sent.indexOf(p));
            expect(earlier.some((a) => at(responses.get(a.id)!) > at(busy))).toBe(true);
          }

          for (const x of sent.filter((r) => r.kind === "cancel" && r.session === s)) {
            const cancel = responses.get(x.id)!;
            const before = accepted.filter((a) => sent.indexOf(a) < sent.indexOf(x));
            if (cancel.result.cancelled) {
              // The turn it aborted was answered first: when cancel returns, the session is idle.
              const aborted = before.filter((a) => at(responses.get(a.id)!) < at(cancel)).at(-1);
              expect(aborted).toBeDefined();
              expect(responses.get(aborted!.id)!.result.status).toBe("aborted");
              expect(before.every((a) => at(responses.get(a.id)!) < at(cancel))).toBe(true);
            } else {
              expect(cancel.result).toEqual({ cancelled: false });
              expect(before.every((a) => at(responses.get(a.id)!) < at(cancel))).toBe(true);
            }
          }

          // The durable log is exactly what was announced (chunks are live only).
          const file = path.join(root, workspaceFolderName(ws.dir), `${s}.jsonl`);
          const announced = events.map((f) => f.params.event).filter((e) => e.type !== "assistant/chunk");
          const logged = fs.existsSync(file)
            ? fs
                .readFileSync(file, "utf8")
                .split("\n")
                .filter(Boolean)
                .slice(1)
                .map((l) => JSON.parse(l))
            : [];
          expect(logged).toEqual(announced);
        }
        expect(c.frames.filter((f) => f.id === null)).toEqual([]);
        expect(c.badLines).toEqual([]);
      }),
      fuzzParams(runs),
    );
    c.request("bye", "shutdown");
    expect((await c.response("bye")).result).toEqual({});
    expect(await c.exit()).toEqual({ code: 0, signal: null });
  }, 120_000);
});
