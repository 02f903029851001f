/**
 * A fork reads its source's checkpoints and writes its own, but loads neither session: it makes
 * no handle for them (checkpoints/by-session.ts), which would read the workspace and, kept for a
 * session not loaded, outlive the fork. Kept, a later turn of that session would be recorded through what
 * this process remembered of a folder another process may have changed since (deleted with its
 * session, blobs and all), and a bridge that forks many sessions would keep a handle for each.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";
import { AgentRuntime } from "../../src/agent/runtime.js";
import { SessionStore } from "../../src/agent/store/index.js";
import { silentLogger } from "../../src/log.js";
import { ScriptedProvider, type Script } from "../../src/providers/scripted.js";
import { toolsFor } from "../../src/tools/registry.js";
import { workspaceAndRootEachTest } from "../support/scripts.js";

const each = workspaceAndRootEachTest("hb-checkpoints-fork-handles");
const text = (t: string) => [{ type: "text" as const, text: t }];
// Every turn overwrites f.txt: its previous content is kept as a blob of the turn's checkpoint.
const script: Script = { turns: [{ steps: [{ toolCalls: [{ name: "write_file", arguments: { path: "f.txt", content: "changed" } }] }, { text: "done" }] }] };

function runtime(): AgentRuntime {
  return new AgentRuntime({
    workspace: each.ws.dir, provider: new ScriptedProvider(script), model: "test-script", system: "test", maxSteps: 4, permissionMode: "workspace-write",
    tools: toolsFor("workspace-write", ["write_file"]), subagentDepth: 1, store: new SessionStore(each.root, each.ws.dir), logger: silentLogger,
    sink: { sessionEvent: async () => undefined, subagentStarted: async () => undefined, subagentFinished: async () => undefined },
  });
}
const handles = (rt: AgentRuntime) => (rt as unknown as { checkpoints: { known: Map<string, unknown> } }).checkpoints.known;

it("keeps no checkpoint handle for a session a fork touched but did not load", async () => {
  fs.writeFileSync(path.join(each.ws.dir, "f.txt"), "original");
  const rt = runtime();
  expect(await rt.prompt("s", text("write"))).toEqual({ kind: "completed" });
  for (let i = 0; i < 5; i++) rt.forkSession("s", `fork-${i}`, undefined);
  // The source is loaded (idle): its handle stays. The forks were never loaded.
  expect([...handles(rt).keys()]).toEqual(["s"]);
  rt.closeIdleSessions();
  rt.forkSession("fork-0", "fork-of-fork", undefined);
  expect(handles(rt).size).toBe(0);
  // What the forks copied is on disk: a fork's rewind, through a handle made anew, gives f.txt back.
  expect(await rt.rewind("fork-of-fork", { sessionId: "fork-of-fork", turn: 1, files: true, conversation: false })).toMatchObject({ restored: ["f.txt"], conflicts: [] });
  expect(fs.readFileSync(path.join(each.ws.dir, "f.txt"), "utf8")).toBe("original");
  rt.closeAll();
});

it("records a turn of a session that another process deleted after a fork read it", async () => {
  const file = path.join(each.ws.dir, "f.txt");
  fs.writeFileSync(file, "original");
  const a = runtime();
  expect(await a.prompt("s", text("write"))).toEqual({ kind: "completed" });
  a.closeIdleSessions(); // s leaves a's memory, its log and lock closed
  a.forkSession("s", "copy", undefined);
  // Another bridge (another runtime on the same folder) deletes s: its checkpoints go with it.
  const b = runtime();
  expect(b.deleteSession("s")).toBe(true);
  b.closeAll();
  // s is new to a now: its turn must keep f.txt's content again, and rewinding it give it back.
  fs.writeFileSync(file, "original");
  expect(await a.prompt("s", text("write"))).toEqual({ kind: "completed" });
  expect(fs.readFileSync(file, "utf8")).toBe("changed");
  const rewound = await a.rewind("s", { sessionId: "s", turn: 1, files: true, conversation: false });
  expect(rewound).toMatchObject({ restored: ["f.txt"], conflicts: [], unrestored: [] });
  expect(fs.readFileSync(file, "utf8")).toBe("original");
  a.closeAll();
});

it("forks a session whose workspace was removed since: the checkpoints are copied without reading the workspace", async () => {
  fs.writeFileSync(path.join(each.ws.dir, "f.txt"), "original");
  const rt = runtime();
  expect(await rt.prompt("s", text("write"))).toEqual({ kind: "completed" });
  rt.closeAll();
  const again = runtime();
  fs.rmSync(each.ws.dir, { recursive: true, force: true });
  expect(again.forkSession("s", "copy", undefined)).toBeUndefined();
  expect(handles(again).size).toBe(0);
  // The copy is the source's: a fork of it, by another runtime, has the same checkpoints.
  const folder = (again as unknown as { checkpoints: { logFolder: string } }).checkpoints.logFolder;
  const listing = (id: string) => fs.readdirSync(path.join(folder, `${id}.checkpoints`)).sort();
  expect(listing("copy")).toEqual(listing("s"));
  again.closeAll();
});
