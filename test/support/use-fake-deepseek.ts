/**
 * A fake DeepSeek server (fake-deepseek.ts) for the tests of the enclosing `describe`, or of the
 * file when called at its top: started before the first of them, stopped after the last. One
 * server for them all, as each test sets the `table` it needs; its `requests` and `problems`
 * accumulate across them.
 */
import { afterAll, beforeAll } from "vitest";
import { FakeDeepSeek, fakeDeepSeekEnv } from "./fake-deepseek.js";

export interface FakeDeepSeekInUse {
  /** The server: its `table` to script, its `requests`, `authorizations` and `problems` to check. */
  readonly server: FakeDeepSeek;
  /** Its base URL; known once it started, so read it inside a test or a hook. */
  readonly url: string;
  /** The bridge's environment for it, with `tuning` (`fakeDeepSeekEnv`). */
  env(tuning?: Record<string, string>): NodeJS.ProcessEnv;
}

export function useFakeDeepSeek(): FakeDeepSeekInUse {
  const server = new FakeDeepSeek();
  let url = "";
  beforeAll(async () => {
    url = await server.start();
  });
  afterAll(() => server.stop());
  const started = () => {
    if (!url) throw new Error("the fake DeepSeek starts before the first test: read its url inside a test or a hook");
    return url;
  };
  return {
    server,
    get url() {
      return started();
    },
    env: (tuning) => fakeDeepSeekEnv(started(), tuning),
  };
}
