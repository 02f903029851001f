/**
 * Runs a snapshot scenario (snapshots/<provider>/<scenario>/scenario.json) against the built
 * binary with a raw NDJSON client, and returns what a client received before the prompt's
 * response, plus the response.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import { BINARY } from "./raw-client.js";

export const ROOT = path.resolve(__dirname, "..", "..");
export { BINARY } from "./raw-client.js";
export const SNAPSHOTS = path.join(ROOT, "snapshots");

export interface Scenario {
  description: string;
  files?: Record<string, string>;
  model?: string;
  script?: unknown;
  prompt: string;
  cancelOn?: string;
  /** Further `initialize` params (`clientTools`, `approvals`). */
  initialize?: Record<string, unknown>;
  /** What the client answers to each `tool/request`, by tool name (the params of `session/tool_result` less the ids). */
  toolResults?: Record<string, { content: unknown[]; isError?: boolean }>;
  /** What the client answers to every `permission/request` (the params of `session/permission` less the ids). */
  permission?: { decision: "allow" | "deny"; message?: string; arguments?: Record<string, unknown> };
  /**
   * On the first `session.event` of type `event`, the client sends `session/steer` with `text`
   * (before it answers that event, when it is a `tool/request`); the steer must answer
   * `{ steered: true }`.
   */
  steerOn?: { event: string; text: string };
  /** `session/prompt.maxCostUsd`: the turn's budget. */
  maxCostUsd?: number;
  /** What the client answers to each `hook/request`, by hook name, in order (the params of `session/hook` less the ids; past the list: `{}`). */
  hooks?: Record<string, Array<Record<string, unknown>>>;
  /** For HTTP providers: what the fake DeepSeek server answers (test/support/fake-deepseek.ts). */
  server?: import("./fake-deepseek.js").ServerTable;
}

export interface ScenarioRun {
  notifications: unknown[];
  response: unknown;
  workspace: string;
  sessionRoot: string;
}

export function scenarioDirs(provider: string): string[] {
  const dir = path.join(SNAPSHOTS, provider);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join(dir, d.name))
    .sort();
}

export function readScenario(dir: string): Scenario {
  return JSON.parse(fs.readFileSync(path.join(dir, "scenario.json"), "utf8")) as Scenario;
}

export async function runScenario(dir: string, provider: string, env: NodeJS.ProcessEnv = process.env): Promise<ScenarioRun> {
  const scenario = readScenario(dir);
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-snap-")));
  const workspace = path.join(base, "workspace");
  const sessionRoot = path.join(base, "sessions");
  fs.mkdirSync(workspace);
  for (const [name, content] of Object.entries(scenario.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    fs.writeFileSync(path.join(workspace, name), content);
  }
  let model = scenario.model ?? "demo";
  if (scenario.script !== undefined) {
    model = path.join(base, "script.json");
    fs.writeFileSync(model, JSON.stringify(scenario.script));
  }
  const child = spawn(BINARY, ["--stdio", "--session-root", sessionRoot], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const lines = readline.createInterface({ input: child.stdout });
  const send = (frame: object) => child.stdin.write(`${JSON.stringify(frame)}\n`);
  const notifications: unknown[] = [];
  try {
    const response = await new Promise<unknown>((resolve, reject) => {
      let cancelled = false;
      let steered = false;
      const steerIds = new Set<number>();
      let nextId = 100;
      const hooksAsked: Record<string, number> = {};
      child.on("exit", (code) => reject(new Error(`bridge exited (${code}) before the prompt's response; stderr:\n${stderr}`)));
      lines.on("line", (line) => {
        const frame = JSON.parse(line);
        if (frame.id === 1) {
          if (frame.error) reject(new Error(`initialize failed: ${JSON.stringify(frame.error)}`));
          return;
        }
        if (typeof frame.id === "number" && frame.id >= 100 && frame.error) reject(new Error(`an answer was refused: ${JSON.stringify(frame.error)}`));
        if (steerIds.has(frame.id) && frame.result?.steered !== true) reject(new Error(`the steer was not recorded: ${JSON.stringify(frame)}`));
        if (frame.id === 2) {
          if (frame.error) reject(new Error(`prompt failed: ${JSON.stringify(frame.error)}`));
          else resolve(frame.result);
          return;
        }
        if ("method" in frame) {
          notifications.push(frame);
          if (!cancelled && scenario.cancelOn && frame.method === "session.event" && frame.params.event.type === scenario.cancelOn) {
            cancelled = true;
            send({ jsonrpc: "2.0", id: 3, method: "session/cancel", params: { sessionId: "snap" } });
          }
          const event = frame.method === "session.event" ? frame.params.event : undefined;
          const sessionId = frame.params?.sessionId;
          if (!steered && scenario.steerOn && event?.type === scenario.steerOn.event) {
            steered = true;
            steerIds.add(nextId);
            send({ jsonrpc: "2.0", id: nextId++, method: "session/steer", params: { sessionId, contentBlocks: [{ type: "text", text: scenario.steerOn.text }] } });
          }
          if (event?.type === "tool/request") {
            const result = scenario.toolResults?.[event.data.name];
            if (result) send({ jsonrpc: "2.0", id: nextId++, method: "session/tool_result", params: { sessionId, callId: event.data.callId, ...result } });
          }
          if (event?.type === "hook/request" && scenario.hooks) {
            const answer = scenario.hooks[event.data.hook]?.[hooksAsked[event.data.hook] ?? 0] ?? {};
            hooksAsked[event.data.hook] = (hooksAsked[event.data.hook] ?? 0) + 1;
            send({ jsonrpc: "2.0", id: nextId++, method: "session/hook", params: { sessionId, hookId: event.data.hookId, ...answer } });
          }
          if (event?.type === "permission/request" && scenario.permission) {
            send({ jsonrpc: "2.0", id: nextId++, method: "session/permission", params: { sessionId, requestId: event.data.requestId, ...scenario.permission } });
          }
        }
      });
      send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { cwd: workspace, provider, model, ...scenario.initialize } });
      const budget = scenario.maxCostUsd !== undefined ? { maxCostUsd: scenario.maxCostUsd } : {};
      send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "snap", contentBlocks: [{ type: "text", text: scenario.prompt }], ...budget } });
    });
    return { notifications, response, workspace, sessionRoot };
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
    fs.rmSync(base, { recursive: true, force: true });
  }
}
