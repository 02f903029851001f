/**
 * A test file's bridge on the `deepseek` route against a local {@link FakeDeepSeek}: the server
 * and a temporary workspace live for the file; each `start()` spawns and initializes a bridge,
 * which is disposed after its test, when the server's `problems` and `requests` are cleared.
 */
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { FakeDeepSeek, fakeDeepSeekEnv } from "./fake-deepseek.js";
import { RawClient } from "./raw-client.js";
import { tempWorkspace, type TempWorkspace } from "./scripts.js";

export interface DeepSeekBridge {
  readonly server: FakeDeepSeek;
  /** The workspace (`cwd` of every bridge). */
  readonly dir: string;
  /**
   * Spawns a bridge (`args`, default no session log) with `defaults` and `tuning` in its
   * environment, initialized (with `init`'s fields added to `initialize`'s params).
   */
  start(tuning?: Record<string, string>, args?: string[], init?: Record<string, unknown>): Promise<RawClient>;
  /** Registers a client to dispose after the current test. */
  track(client: RawClient): RawClient;
}

export function useDeepSeekBridge(prefix: string, defaults: Record<string, string>): DeepSeekBridge {
  const server = new FakeDeepSeek();
  let baseUrl = "";
  let ws: TempWorkspace | undefined;
  const clients: RawClient[] = [];
  beforeAll(async () => {
    baseUrl = await server.start();
    ws = tempWorkspace(prefix);
  });
  afterAll(async () => {
    await server.stop();
    ws?.cleanup();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    server.problems.length = 0;
    server.requests.length = 0;
  });
  const bridge: DeepSeekBridge = {
    server,
    get dir() {
      return ws!.dir;
    },
    track(client) {
      clients.push(client);
      return client;
    },
    async start(tuning = {}, args = ["--stdio", "--no-session-log"], init = {}) {
      const client = bridge.track(new RawClient({ args, env: fakeDeepSeekEnv(baseUrl, { ...defaults, ...tuning }) }));
      client.request("init", "initialize", { cwd: bridge.dir, provider: "deepseek", model: "deepseek-flash", ...init });
      expect((await client.response("init")).error).toBeUndefined();
      return client;
    },
  };
  return bridge;
}
