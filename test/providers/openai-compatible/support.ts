/**
 * Shared by the OpenAI-compatible provider tests: a fake server per test (`useFakeServer`), the
 * provider built against it, and helpers to run a stream.
 */
import { afterEach, beforeEach } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { deepseekProvider } from "../../../src/providers/deepseek.js";
import type { ModelProvider, ModelRequest, ModelStreamPart, ProviderFactory } from "../../../src/providers/types.js";
import { DONE, FakeOpenAIServer, chunk, deepseekUsage, frame, sseReply } from "../../support/fake-openai-server.js";

/** The current test's fake server (a live binding, replaced before each test). */
export let server: FakeOpenAIServer;

/** Starts a fresh fake server before each test of the file and closes it after. */
export function useFakeServer(): void {
  beforeEach(async () => {
    server = await FakeOpenAIServer.start();
  });
  afterEach(async () => {
    await server.close();
  });
}

/** Fast retries and short timeouts unless a test overrides them. */
export function testEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    DEEPSEEK_API_KEY: "sk-test-key",
    DEEPSEEK_BASE_URL: server.url,
    HARNESS_RETRY_BASE_MS: "1",
    HARNESS_RETRY_MAX_MS: "5",
    HARNESS_IDLE_TIMEOUT_MS: "5000",
    ...extra,
  };
}

export async function makeProvider(extra: NodeJS.ProcessEnv = {}, factory: ProviderFactory = deepseekProvider): Promise<ModelProvider> {
  return factory.create({ model: "deepseek-flash", cwd: "/tmp", env: testEnv(extra), logger: silentLogger });
}

export function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "deepseek-flash",
    system: "You are a test.",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    tools: [],
    sessionId: "s1",
    ...overrides,
  };
}

export async function collect(provider: ModelProvider, req: ModelRequest = request(), signal: AbortSignal = new AbortController().signal) {
  const parts: ModelStreamPart[] = [];
  for await (const batch of provider.stream(req, signal)) parts.push(...batch);
  return parts;
}

/** Runs a stream to its end; returns the parts seen before it threw, and the error. */
export async function collectError(provider: ModelProvider, req: ModelRequest = request(), signal: AbortSignal = new AbortController().signal) {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const batch of provider.stream(req, signal)) parts.push(...batch);
  } catch (error) {
    return { parts, error };
  }
  throw new Error(`the stream did not fail; parts: ${JSON.stringify(parts)}`);
}

export const text = (parts: ModelStreamPart[]) =>
  parts.flatMap((p) => (p.type === "text-delta" ? [p.text] : [])).join("");
export const reasoning = (parts: ModelStreamPart[]) =>
  parts.flatMap((p) => (p.type === "reasoning-delta" ? [p.text] : [])).join("");

/** Splits a string into `n` pieces of whole code points. */
export function pieces(value: string, n: number): string[] {
  const chars = [...value];
  const size = Math.ceil(chars.length / n);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

/** True when the bytes end on the last byte of a UTF-8 character. */
export function isCompleteTail(bytes: Uint8Array): boolean {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && (bytes[i] & 0xc0) === 0x80) {
    continuation++;
    i--;
  }
  if (i < 0) return false;
  const lead = bytes[i];
  const expected = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return continuation === expected;
}

/** A short successful stream. */
export function okReply() {
  return sseReply([
    frame(chunk({ role: "assistant", content: "" })),
    frame(chunk({ content: "ok" })),
    frame(chunk({ content: "" }, "stop", { usage: deepseekUsage(10, 1, 0) })),
    DONE,
  ]);
}
