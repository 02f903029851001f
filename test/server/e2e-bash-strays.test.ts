/**
 * End to end against the built binary: a bash command in `full` mode (no sandbox) whose
 * descendant left its process group (`setsid`) and ignores SIGTERM, still running when the
 * bridge stops — a shutdown or a SIGTERM. The bridge exits before the SIGTERM's grace, and the
 * stray gets its SIGKILL at the bridge's exit. (An end of input lets the turn finish: the
 * command runs to its end or its timeout.)
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pidsWith, waitFor } from "../reliability/support/procs.js";
import { RawClient, initParams, promptParams } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
const clients: RawClient[] = [];
beforeEach(() => {
  ws = tempWorkspace("hb-strays-");
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  ws.cleanup();
});

describe.runIf(process.platform === "linux")("bash in full mode: a descendant that left the command's group", () => {
  it.each(["shutdown", "SIGTERM"] as const)("is ended when the bridge stops during the command (%s), SIGTERM ignored", async (how) => {
    const m = `hbe2estray${process.pid}x${Date.now() % 100000}x${how.length}`;
    const c = new RawClient({ args: ["--stdio", "--no-session-log"] });
    clients.push(c);
    const command = `setsid bash -c 'trap "" TERM; while :; do sleep 0.2; done' ${m} & sleep 86400`;
    const script = turns([{ toolCalls: [{ name: "bash", arguments: { command } }] }, { text: "done" }]);
    c.request("init", "initialize", initParams(ws.dir, ws.script("s.json", script), { permissionMode: "full" }));
    expect((await c.response("init")).error).toBeUndefined();
    c.request("p", "session/prompt", promptParams("s1"));
    expect(await waitFor(() => pidsWith(m, true).length > 0, 10_000)).toBe(true);
    if (how === "shutdown") c.request("bye", "shutdown");
    else c.kill("SIGTERM");
    expect((await c.exit(15_000)).code).toBe(0);
    expect(await waitFor(() => pidsWith(m, true).length === 0, 8000)).toBe(true);
  }, 30_000);
});
