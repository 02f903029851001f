/**
 * Through the binary, under open-file limits from too few for Node to start up to enough for
 * everything: a bridge that answered `initialize` answers its prompt and exits cleanly when its
 * stdin ends, whatever the limit leaves for bash. A `bash` whose process (or sandbox) cannot get
 * its pipes is that tool call's error, never the end of the bridge: the spawn's EMFILE comes as
 * an "error" event with no stdio streams, and reading them before listening for it crashed the
 * process (an unhandled "error" event, exit code 1, no answer to the prompt).
 */
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { initParams, promptParams, RawClient } from "../support/raw-client.js";
import { initAndPrompt, runUnderLimit } from "../support/under-limit.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace | undefined;
afterEach(() => {
  ws?.cleanup();
  ws = undefined;
});

describe.each(["full", "workspace-write"])("bash under a low open-file limit (%s)", (permissionMode) => {
  it("is the tool call's result or error; the bridge answers and exits cleanly", () => {
    ws = tempWorkspace("hb-bash-fds-");
    const script = ws.script("bash.json", {
      turns: [{ steps: [{ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }, { text: "ran" }] }],
    });
    const input = initAndPrompt(initParams(ws.dir, script, { permissionMode }));
    const seen = new Set<string>();
    // No session log: a log the limit leaves no descriptor for would make the prompt -32001
    // out-of-descriptors before any bash (docs/guarantees.md, "Out of descriptors"), which is
    // not what this holds.
    for (let limit = 14; limit <= 44; limit++) {
      const started = runUnderLimit(limit, ["--stdio", "--no-session-log"], input, 30_000);
      if (!started) {
        // Too few to start Node, load the script or the sandbox: no bridge to hold to anything.
        seen.add("no start");
        continue;
      }
      const { run, frames } = started;
      const at = `limit ${limit}: ${run.stderr.slice(0, 600)}`;
      expect(frames.find((f) => f.id === 2), at).toEqual({ jsonrpc: "2.0", id: 2, result: { status: "ok", reason: { kind: "completed" } } });
      expect([run.status, run.signal], at).toEqual([0, null]);
      // Every failure the bridge handles it names; nothing is left to the last-resort handlers
      // (a throw in an exit listener would skip the listeners after it).
      expect(run.stderr, at).not.toMatch(/unhandled|uncaught/i);
      const [result] = frames.filter((f) => f.method === "session.event" && f.params.event.type === "tool/result").map((f) => f.params.event.data);
      if (!result.isError) {
        expect(result.content[0].text, at).toBe("hi\n[exit code 0]");
        seen.add("ran");
      } else {
        // In workspace-write it may be the sandbox's refusal: it could not be started either,
        // and the fix is the limit, not installing bubblewrap.
        expect(result.content[0].text, at).toMatch(/out of file descriptors|no file descriptor left/);
        if (permissionMode === "workspace-write") expect(result.content[0].text, at).not.toMatch(/install bubblewrap/);
        seen.add("error");
      }
    }
    expect([...seen].sort()).toEqual(["error", "no start", "ran"]);
  }, 180_000);
});

describe("a sandbox that could not start for want of descriptors", () => {
  it("is probed again at the next bash call: bash runs once descriptors are free again, without a restart", async () => {
    ws = tempWorkspace("hb-bash-fds-again-");
    const dir = ws.dir;
    const script = ws.script("bash.json", {
      turns: [1, 2].map(() => ({ steps: [{ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }, { text: "ran" }] })),
    });
    const bashResult = async (client: RawClient, id: number) => {
      client.request(id, "session/prompt", promptParams("s"));
      await client.response(id, 30_000);
      const results = client.events("s").filter((e) => e.type === "tool/result");
      return results[results.length - 1].data;
    };
    // The running bridge's soft limit is lowered (raising a hard limit needs CAP_SYS_RESOURCE,
    // which containers often drop; the soft one may go back up to the hard one). Which soft limit
    // lets the turn run but not the sandbox's start depends on the machine: found by trying each.
    let refusedAt: number | undefined;
    for (let limit = 18; limit <= 44 && refusedAt === undefined; limit++) {
      const client = new RawClient();
      const soft = (value: number | string) => {
        const run = spawnSync("prlimit", ["--pid", String(client.child.pid), `--nofile=${value}:`], { encoding: "utf8" });
        expect(run.status, run.stderr).toBe(0);
      };
      try {
        client.request(1, "initialize", initParams(dir, script, { permissionMode: "workspace-write" }));
        expect((await client.response(1, 30_000)).result).toBeDefined();
        soft(limit);
        const first = await bashResult(client, 2).catch(() => undefined);
        if (!first?.isError || !/no file descriptor left/.test(first.content[0].text)) continue;
        refusedAt = limit;
        const hard = spawnSync("prlimit", ["--pid", String(client.child.pid), "--nofile", "--raw", "--noheadings", "--output=HARD"], { encoding: "utf8" });
        soft(hard.stdout.trim());
        const second = await bashResult(client, 3);
        expect(second.content[0].text, `soft limit ${limit}: ${client.stderr.slice(0, 600)}`).toBe("hi\n[exit code 0]");
      } finally {
        await client.dispose();
      }
    }
    expect(refusedAt, "no soft limit made the sandbox's start fail for want of descriptors").toBeDefined();
  }, 240_000);
});
