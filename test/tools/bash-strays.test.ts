/**
 * bash's descendants that left the command's process group (`setsid`), where no sandbox holds
 * them (`full` mode): the bridge ends them when it stops the command (timeout, cancel), and
 * never signals a process outside the command's tree.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pidsWith, waitFor } from "../reliability/support/procs.js";
import { bashTool } from "../../src/tools/bash.js";
import { makeCtx, makeSandbox, text } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const outsiders: ChildProcess[] = [];
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => {
  for (const child of outsiders.splice(0)) if (child.pid !== undefined) try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
  sb.cleanup();
});

const run = (args: Record<string, unknown>, signal?: AbortSignal) => bashTool.execute(args as never, makeCtx(sb.ws, "full", signal));

let counter = 0;
const marker = () => `hbstray${process.pid}x${Date.now() % 100000}x${++counter}`;
/** A sleeper in a session of its own, tagged `m` (`; :` keeps bash from exec'ing the sleep, which would drop the tag). */
const setsidSleeper = (m: string) => `setsid bash -c 'sleep 86400; :' ${m} &`;
/** The same, ignoring SIGTERM: only SIGKILL ends it. */
const setsidStubborn = (m: string) => `setsid bash -c 'trap "" TERM; while :; do sleep 0.2; done' ${m} &`;

describe("bash (full mode): processes that left the command's group", () => {
  it("are ended when the command times out", async () => {
    const m = marker();
    const out = await run({ command: `${setsidSleeper(m)} echo waiting; sleep 86400`, timeoutMs: 1500 });
    expect(out.isError).toBe(true);
    expect(text(out)).toMatch(/^waiting\n\[timed out after 1500 ms/);
    expect(await waitFor(() => pidsWith(m, true).length === 0, 8000)).toBe(true);
  }, 20_000);

  it("are ended when the call is aborted (a cancelled turn, the bridge's shutdown)", async () => {
    const m = marker();
    const ac = new AbortController();
    const p = run({ command: `${setsidSleeper(m)} sleep 86400` }, ac.signal);
    expect(await waitFor(() => pidsWith(m, true).length > 0, 5000)).toBe(true);
    ac.abort(new Error("cancelled"));
    const out = await p;
    expect(text(out)).toMatch(/\[aborted: /);
    expect(await waitFor(() => pidsWith(m, true).length === 0, 8000)).toBe(true);
  }, 20_000);

  it("get SIGKILL after the grace when they ignore SIGTERM", async () => {
    const m = marker();
    const ac = new AbortController();
    const p = run({ command: `${setsidStubborn(m)} sleep 86400` }, ac.signal);
    expect(await waitFor(() => pidsWith(m, true).length > 0, 5000)).toBe(true);
    ac.abort(new Error("cancelled"));
    await p;
    // Still there after the SIGTERM (it ignores it), gone after the SIGKILL.
    expect(pidsWith(m, true).length).toBeGreaterThan(0);
    expect(await waitFor(() => pidsWith(m, true).length === 0, 8000)).toBe(true);
  }, 20_000);

  it("never include a process outside the command's tree", async () => {
    const m = marker();
    const termed = path.join(sb.root, "outsider-termed");
    // Like the strays, it leads a session of its own; it is the test's child, not the command's.
    const outsider = spawn("bash", ["-c", `trap 'echo > ${JSON.stringify(termed)}' TERM; while :; do sleep 0.2; done`, `${m}-outsider`], { detached: true, stdio: "ignore" });
    outsiders.push(outsider);
    expect(await waitFor(() => pidsWith(`${m}-outsider`, true).length > 0, 5000)).toBe(true);
    const ac = new AbortController();
    const p = run({ command: `${setsidSleeper(m)} sleep 86400` }, ac.signal);
    expect(await waitFor(() => pidsWith(m, true).length > 0, 5000)).toBe(true);
    ac.abort(new Error("cancelled"));
    await p;
    expect(await waitFor(() => pidsWith(m, true).length === 0, 8000)).toBe(true);
    expect(pidsWith(`${m}-outsider`, true).length).toBe(1);
    expect(fs.existsSync(termed)).toBe(false);
  }, 20_000);
});
