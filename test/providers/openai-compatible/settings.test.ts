/** Settings and routes: keys, base URLs, tuning variables, the lazy implementation. */
import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { deepseekProvider, openaiProvider } from "../../../src/providers/deepseek.js";
import { chatCompletionsUrl } from "../../../src/providers/openai-compatible/index.js";
import { ProviderUnavailableError } from "../../../src/providers/types.js";
import { useFakeServer } from "./support.js";

useFakeServer();

const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../src/providers");

describe("configuration", () => {
  it("deepseek without DEEPSEEK_API_KEY is unavailable, naming the variable", async () => {
    for (const env of [{}, { DEEPSEEK_API_KEY: "  " }, { DEEPSEEK_BASE_URL: "http://127.0.0.1:1" }]) {
      const attempt = deepseekProvider.create({ model: "m", cwd: "/tmp", env });
      await expect(attempt).rejects.toBeInstanceOf(ProviderUnavailableError);
      await expect(attempt).rejects.toThrow(/DEEPSEEK_API_KEY/);
    }
  });

  it("the missing-key error does not offer DEEPSEEK_BASE_URL as a way round the key", async () => {
    const message = await Promise.resolve()
      .then(() => deepseekProvider.create({ model: "m", cwd: "/tmp", env: {} }))
      .then(
        () => "",
        (error: Error) => error.message,
      );
    expect(message).toMatch(/needs DEEPSEEK_API_KEY; set it in the bridge's environment or pass it with --secrets-fd/);
    expect(message).not.toMatch(/or DEEPSEEK_BASE_URL/);
    expect(message).toContain("also when DEEPSEEK_BASE_URL names another endpoint");
  });

  it("openai without a key is unavailable unless OPENAI_BASE_URL is set", async () => {
    const attempt = openaiProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "sk" } });
    await expect(attempt).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(attempt).rejects.toThrow(/OPENAI_API_KEY/);
    const provider = await openaiProvider.create({ model: "m", cwd: "/tmp", env: { OPENAI_BASE_URL: "http://127.0.0.1:8000/v1" } });
    expect(provider.name).toBe("openai");
  });

  it("rejects malformed base URLs and tuning variables, naming them", async () => {
    await expect(
      deepseekProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "k", DEEPSEEK_BASE_URL: "ftp://x" } }),
    ).rejects.toThrow(/DEEPSEEK_BASE_URL/);
    await expect(
      deepseekProvider.create({ model: "m", cwd: "/tmp", env: { DEEPSEEK_API_KEY: "k", HARNESS_IDLE_TIMEOUT_MS: "soon" } }),
    ).rejects.toThrow(/HARNESS_IDLE_TIMEOUT_MS/);
  });

  it("the factories' module loads neither undici nor eventsource-parser nor the implementation eagerly", () => {
    const valueImports = (file: string) =>
      fs
        .readFileSync(path.join(srcDir, file), "utf8")
        .split("\n")
        .filter((line) => /^\s*import\s/.test(line) && !/^\s*import\s+type\s/.test(line));
    expect(valueImports("deepseek.ts")).toEqual([]);
    const implFiles = fs.readdirSync(path.join(srcDir, "openai-compatible")).filter((f) => f.endsWith(".ts"));
    expect(implFiles).toContain("index.ts");
    const implImports = implFiles.flatMap((f) => valueImports(path.join("openai-compatible", f))).join("\n");
    expect(implImports).not.toMatch(/undici|eventsource-parser/);
  });

  it("chatCompletionsUrl strips trailing slashes and keeps /v1", () => {
    expect(chatCompletionsUrl("https://api.deepseek.com")).toBe("https://api.deepseek.com/chat/completions");
    expect(chatCompletionsUrl("https://api.deepseek.com/")).toBe("https://api.deepseek.com/chat/completions");
    expect(chatCompletionsUrl("https://api.deepseek.com/v1")).toBe("https://api.deepseek.com/v1/chat/completions");
    expect(chatCompletionsUrl("http://localhost:11434/v1//")).toBe("http://localhost:11434/v1/chat/completions");
  });
});
