/**
 * What the hooks' end-to-end tests share (test/server/e2e-hooks*.test.ts): a fresh workspace
 * holding `a.txt` per test, bridges started on it and disposed after it, and the small readers
 * of a client's events. Calling `hookKit` registers the per-test setup and cleanup.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import { RawClient, initParams } from "./raw-client.js";
import { tempWorkspace, type TempWorkspace } from "./scripts.js";

export function hookKit(prefix: string) {
  let workspace: TempWorkspace | undefined;
  const clients: RawClient[] = [];
  const roots: string[] = [];

  beforeEach(() => {
    workspace = tempWorkspace(prefix);
    workspace.file("a.txt", "contents of a\n");
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.dispose()));
    workspace?.cleanup();
    for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
  });

  const kit = {
    /** This test's workspace. */
    get ws(): TempWorkspace {
      if (!workspace) throw new Error("hookKit: no workspace outside a test");
      return workspace;
    },
    /** Bridges to dispose after the test. */
    clients,
    /** A bridge initialized on the workspace (`script` written as s.json, unless `model` names one). */
    async initialized(script: object, extra: object, args = ["--stdio", "--no-session-log"], env?: NodeJS.ProcessEnv, provider = "scripted", model?: string): Promise<RawClient> {
      const c = new RawClient({ args, env });
      clients.push(c);
      c.request("init", "initialize", { ...initParams(kit.ws.dir, model ?? kit.ws.script("s.json", script as any)), provider, ...extra });
      expect((await c.response("init")).error).toBeUndefined();
      return c;
    },
    /** The `n`th event of `type` in `sessionId`, once it has come. */
    event(c: RawClient, sessionId: string, type: string, n = 1): Promise<any> {
      return c
        .waitFrame((f) => f.method === "session.event" && f.params.sessionId === sessionId && c.events(sessionId).filter((e) => e.type === type).length >= n, `${type} #${n} in ${sessionId}`)
        .then(() => c.events(sessionId).filter((e) => e.type === type)[n - 1]);
    },
    ofType: (c: RawClient, sessionId: string, type: string) => c.events(sessionId).filter((e) => e.type === type),
    /** The event types of a session so far, chunks left out. */
    types: (c: RawClient, sessionId: string) => c.events(sessionId).map((e) => e.type).filter((t) => t !== "assistant/chunk"),
    /** `session/hook` params. */
    hook: (sessionId: string, hookId: string, answer: object = {}) => ({ sessionId, hookId, ...answer }),
    /** A session root removed after the test. */
    sessionRoot(): string {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-hooks-root-"));
      roots.push(root);
      return root;
    },
  };
  return kit;
}
