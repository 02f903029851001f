/**
 * The bridge on pipes, as a Python client's `subprocess.PIPE` gives them, and on socket pairs, as
 * Node's `spawn` gives them: on pipes it reads and answers its first request before it makes its
 * stdio streams (src/transport/stdio.ts), on socket pairs it makes them first. Either way every
 * request is answered once, frames keep their order, and a client that does not read cannot
 * block it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];

beforeEach(() => {
  ws = tempWorkspace("hb-stdio-");
  ws.file("README.md", "# A workspace\n");
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

const EARLY = /stdio: (\d+) bytes read and (\d+) written before the streams were made/;

function start(pipes: boolean, args: string[] = ["--stdio", "--no-session-log", "--log-level", "debug"]): RawClient {
  const client = new RawClient({ pipes, args });
  clients.push(client);
  return client;
}

describe.each([
  ["pipes (a Python client)", true],
  ["socket pairs (a Node client)", false],
])("on %s", (_name, pipes) => {
  it("answers initialize, a prompt and a bad line written together: every frame once, in order, the turn's before its response; more input later; exit 0 at its end", async () => {
    const c = start(pipes);
    c.send(RawClient.request(1, "initialize", initParams(ws.dir)), RawClient.request(2, "session/prompt", promptParams("p1", "show me")), "not json");
    const init = await c.response(1);
    expect(init.result.protocolVersion).toBe(1);
    expect((await c.response(2)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const parseError = await c.waitFrame((f) => f.id === null && f.error?.code === -32700, "the parse error");
    expect(parseError.error?.data).toMatchObject({ kind: "parse-error" });
    const turn = c.frames.filter((f) => f.method === "session.event" && f.params.sessionId === "p1");
    expect(turn.map((f) => f.params.event.type).at(-1)).toBe("turn/end");
    const respIndex = c.frames.findIndex((f) => f.id === 2);
    for (const f of turn) expect(c.indexOf(f)).toBeLessThan(respIndex);
    // Written after the streams exist: read and answered through them.
    await new Promise((resolve) => setTimeout(resolve, 100));
    c.request(3, "session/prompt", promptParams("p1", "again"));
    expect((await c.response(3)).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    expect(c.frames.filter((f: Frame) => f.id === 1 || f.id === 2 || f.id === 3)).toHaveLength(3);
    expect(c.badLines).toEqual([]);
    const stderr = await c.finalStderr();
    expect((await c.exit()).code).toBe(0);
    const early = EARLY.exec(stderr);
    if (pipes) {
      // The first chunk was read early, and the initialize response left before the streams existed.
      expect(early).not.toBeNull();
      expect(Number(early![2])).toBeGreaterThanOrEqual(`${c.lines[c.frames.indexOf(init)]}\n`.length);
    } else {
      expect(early).toBeNull();
    }
  });

  // ~64 KiB of bad lines, waiting before the bridge reads: ~170 KiB of answers, more than stdout's pipe holds.
  const flood = `${Array.from({ length: 1400 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"nope/${i}"}`).join("\n")}\n`;

  it("answers a flood it found waiting, every request once and in order, though the client read nothing for a while", async () => {
    const c = start(pipes);
    c.stdout.pause();
    void c.sendRaw(flood);
    await new Promise((resolve) => setTimeout(resolve, 500));
    c.stdout.resume();
    expect((await c.response(1399, 30_000)).error?.code).toBe(-32601);
    expect(c.frames.map((f) => f.id)).toEqual(Array.from({ length: 1400 }, (_, i) => i));
    expect(c.badLines).toEqual([]);
    const early = EARLY.exec(await c.finalStderr());
    // On pipes the first 64 KiB were read early, and the answers' writes stopped at the full pipe.
    if (pipes) expect(early?.slice(1).map(Number)).toEqual([65536, expect.any(Number)]);
    else expect(early).toBeNull();
  });

  it("is not blocked by a flood it found waiting while the client reads nothing: a signal ends it within its drain deadline", async () => {
    const c = start(pipes);
    c.stdout.pause();
    void c.sendRaw(flood);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const stopped = Date.now();
    c.kill("SIGTERM");
    expect((await c.exit(20_000)).code).toBe(0);
    // The drain deadline is 5 s (lifecycle.ts); a write blocked on the full pipe would never return.
    expect(Date.now() - stopped).toBeLessThan(15_000);
  });
});
