/**
 * Credentials never travel in a base URL: one with userinfo is refused at `initialize` with
 * -32004, and neither that answer nor stderr shows the password — also for a URL that does not
 * even parse. Through the binary.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RawClient } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace | undefined;
let client: RawClient | undefined;
afterEach(async () => {
  await client?.dispose();
  ws?.cleanup();
});

const PASSWORD = "hunter2-canary-password";

describe("a base URL with credentials", () => {
  for (const [name, url] of [
    ["with userinfo", `https://user:${PASSWORD}@api.example.test`],
    ["with userinfo that does not parse", `https://user:${PASSWORD}@exa mple.test`],
  ] as const) {
    it(`is refused at initialize with -32004, the password shown nowhere (${name})`, async () => {
      ws = tempWorkspace("hb-secrets-");
      client = new RawClient({ args: ["--stdio", "--no-session-log", "--log-level", "debug"], env: { ...process.env, DEEPSEEK_API_KEY: "sk-canary-key", DEEPSEEK_BASE_URL: url } });
      client.request(1, "initialize", { cwd: ws.dir, provider: "deepseek", model: "deepseek-chat" });
      const answer = await client.response(1);
      expect(answer.error?.code).toBe(-32004);
      expect(answer.error?.message).toMatch(/DEEPSEEK_BASE_URL/);
      client.request(2, "shutdown");
      await client.response(2);
      await client.exited;
      expect(JSON.stringify(client.frames)).not.toContain(PASSWORD);
      expect(client.stderr).not.toContain(PASSWORD);
      expect(JSON.stringify(client.frames)).not.toContain("sk-canary-key");
      expect(client.stderr).not.toContain("sk-canary-key");
    });
  }
});
