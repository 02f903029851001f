/**
 * Through the binary, an MCP stdio server configured under open-file limits from too few for
 * Node to start up to enough for everything: where the bridge answers `initialize`, the server
 * is connected, or failed with a reason that names what was missing (the descriptors for its
 * pipes, or its own exit), and the bridge answers its prompt and exits cleanly. A spawn that
 * fails for want of descriptors has no stdio streams: reading them threw, the server's error
 * said "Cannot read properties of undefined", and closing it was an unhandled rejection.
 */
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initParams } from "../support/raw-client.js";
import { initAndPrompt, runUnderLimit } from "../support/under-limit.js";
import { probe } from "../support/mcp-servers.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace | undefined;
afterEach(() => {
  ws?.cleanup();
  ws = undefined;
});

describe("an MCP stdio server under a low open-file limit", () => {
  it("connects or fails with a reason that names the limit; the bridge answers and exits cleanly", () => {
    ws = tempWorkspace("hb-mcp-fds-");
    const script = ws.script("plain.json", { turns: [{ steps: [{ text: "done" }] }] });
    const mcpServers = { p: probe(path.join(ws.dir, "probe.log")) };
    const input = initAndPrompt(initParams(ws.dir, script, { mcpServers }));
    const seen = new Set<string>();
    for (let limit = 16; limit <= 40; limit++) {
      const started = runUnderLimit(limit, ["--stdio", "--no-session-log"], input, 60_000);
      if (!started) {
        seen.add("no start");
        continue;
      }
      const { run, frames } = started;
      const init = frames.find((f) => f.id === 1);
      const at = `limit ${limit}: ${run.stderr.slice(-800)}`;
      const [server] = init.result.mcpServers;
      if (server.status === "connected") seen.add("connected");
      else if (/out of file descriptors .*ulimit -n/.test(server.error)) seen.add("out of descriptors");
      else expect(server.error, at).toMatch(/exited with code|killed by/);
      expect(frames.find((f) => f.id === 2), at).toEqual({ jsonrpc: "2.0", id: 2, result: { status: "ok", reason: { kind: "completed" } } });
      expect([run.status, run.signal], at).toEqual([0, null]);
      expect(run.stderr, at).not.toMatch(/unhandled/);
    }
    expect([...seen].sort()).toEqual(["connected", "no start", "out of descriptors"]);
  }, 240_000);
});
