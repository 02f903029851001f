/**
 * Shared by the rewind tests: a bridge on a scripted three-turn session in a temporary
 * workspace (a git work tree or a plain folder) with its own session root, and request helpers.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "vitest";
import { Pacer } from "../../src/agent/checkpoints/path-state.js";
import { workspaceFolderName } from "../../src/agent/store/index.js";
import { RawClient, initParams, promptParams, type Frame } from "../support/raw-client.js";
import { tempWorkspace, turns, type TempWorkspace } from "../support/scripts.js";

/**
 * Turn 1 creates new.txt and overwrites keep.txt; turn 2 edits keep.txt; turn 3 runs bash,
 * which removes doomed.txt and creates made.txt. Before the session the workspace holds
 * keep.txt ("original") and doomed.txt.
 */
export const THREE_TURNS = turns(
  [{ toolCalls: [{ name: "write_file", arguments: { path: "new.txt", content: "new\n" } }, { name: "write_file", arguments: { path: "keep.txt", content: "turn1\n" } }] }, { text: "one" }],
  [{ toolCalls: [{ name: "edit_file", arguments: { path: "keep.txt", oldText: "turn1", newText: "turn2" } }] }, { text: "two" }],
  [{ toolCalls: [{ name: "bash", arguments: { command: "rm doomed.txt && echo made > made.txt" } }] }, { text: "three" }],
  [{ text: "four" }],
);

/**
 * The input tokens of the first model request of each turn, by turn: the scripted model
 * reports them from the characters of the history it is sent, so two turns started with the
 * same prompt on the same history report the same number.
 */
export function firstRequestTokens(events: any[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of events) if (e.type === "assistant/message" && e.data.step === 1) out.set(e.data.turn, e.data.usage.inputTokens);
  return out;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } });
}

/** Makes `dir` a git work tree whose one commit holds every file in it. */
export function commitAll(dir: string): void {
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base");
}

/** `fn`, each call of which takes a pacing slice and a bit (a big file's read) after `counted()`: only a pass's yield lets I/O in. */
export function slowerThanASlice<T extends (...args: any[]) => any>(fn: T, counted: () => void = () => undefined): T {
  return ((...args: any[]) => {
    counted();
    const until = performance.now() + Pacer.SLICE_MS + 5;
    while (performance.now() < until);
    return fn(...args);
  }) as T;
}

export class Rig {
  readonly ws: TempWorkspace;
  readonly root: string;
  private readonly clients: RawClient[] = [];
  private id = 0;

  /** `setup` adds to the workspace before the first commit (a git work tree commits everything it made); `initArgs` go to `git init`. */
  constructor(readonly gitRepo: boolean, prefix = "hb-rewind-", options: { initArgs?: string[]; setup?: (ws: TempWorkspace) => void } = {}) {
    this.ws = tempWorkspace(prefix);
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-rewind-root-"));
    this.ws.file("keep.txt", "original\n");
    this.ws.file("doomed.txt", "doomed\n");
    options.setup?.(this.ws);
    if (gitRepo) {
      git(this.ws.dir, "init", "-q", ...(options.initArgs ?? []));
      git(this.ws.dir, "add", options.setup ? "." : "keep.txt", ...(options.setup ? [] : ["doomed.txt"]));
      git(this.ws.dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base");
    }
  }

  async bridge(script: object = THREE_TURNS, env: NodeJS.ProcessEnv = process.env, extra: object = {}, args = ["--stdio", "--session-root", this.root]): Promise<RawClient> {
    const c = new RawClient({ args, env });
    this.clients.push(c);
    this.ws.script(".script.json", script as never);
    if (this.gitRepo) fs.appendFileSync(path.join(this.ws.dir, ".git", "info", "exclude"), ".script.json\n");
    c.request("init", "initialize", initParams(this.ws.dir, ".script.json", extra));
    expect((await c.response("init")).error).toBeUndefined();
    return c;
  }

  async call(c: RawClient, method: string, params?: object): Promise<Frame> {
    const id = `r${++this.id}`;
    c.request(id, method, params);
    return c.response(id);
  }

  async ok(c: RawClient, method: string, params?: object): Promise<any> {
    const frame = await this.call(c, method, params);
    expect(frame.error, `${method} ${JSON.stringify(params)}`).toBeUndefined();
    return frame.result;
  }

  async prompt(c: RawClient, sessionId: string, text = "go on"): Promise<void> {
    expect((await this.ok(c, "session/prompt", promptParams(sessionId, text))).status).toBe("ok");
  }

  async events(c: RawClient, sessionId: string): Promise<any[]> {
    return (await this.ok(c, "session/read", { sessionId, limit: 1000 })).events;
  }

  /** The session's checkpoint store folder. */
  store(sessionId = "s"): string {
    return path.join(this.root, workspaceFolderName(this.ws.dir), `${sessionId}.checkpoints`);
  }

  read(rel: string): string | undefined {
    const p = path.join(this.ws.dir, rel);
    return fs.existsSync(p) ? fs.readFileSync(p, "utf8") : undefined;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((c) => c.dispose()));
    this.ws.cleanup();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}
