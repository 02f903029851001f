/**
 * The `deepseek` and `openai` provider factories: two routes over one OpenAI-compatible
 * implementation (`openai-compatible/`), which is loaded only when a provider is created.
 *
 * This module stays light on purpose: the bridge registers these factories at start-up, and
 * nothing here may pull in the HTTP client or the SSE parser.
 *
 * @module
 */
import type { ModelProvider, ProviderConfig, ProviderFactory } from "./types.js";
import type { RouteDefinition } from "./openai-compatible/index.js";

/** DeepSeek: `DEEPSEEK_BASE_URL` (default `https://api.deepseek.com`), `DEEPSEEK_API_KEY` required. */
export const DEEPSEEK_ROUTE: Readonly<RouteDefinition> = Object.freeze({
  name: "deepseek",
  baseUrlVar: "DEEPSEEK_BASE_URL",
  defaultBaseUrl: "https://api.deepseek.com",
  apiKeyVar: "DEEPSEEK_API_KEY",
  keyOptionalWithBaseUrl: false,
  // DeepSeek's thinking mode needs the reasoning of an assistant turn with tool calls sent back.
  sendReasoningContent: true,
  // api-docs.deepseek.com/guides/thinking_mode; user_id: quick_start/rate_limit.
  reasoningEfforts: ["low", "high", "max"],
  userField: "user_id",
});

/**
 * Any OpenAI-compatible server: `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
 * `OPENAI_API_KEY`.
 *
 * The key may be missing only when `OPENAI_BASE_URL` is set: local servers (vLLM, Ollama,
 * llama.cpp) usually need none, while api.openai.com always does, so a missing key with the
 * default URL is a configuration error we report at `initialize` rather than as a 401 later.
 * `reasoning_content` is never sent back on this route: strict servers reject unknown fields.
 */
export const OPENAI_ROUTE: Readonly<RouteDefinition> = Object.freeze({
  name: "openai",
  baseUrlVar: "OPENAI_BASE_URL",
  defaultBaseUrl: "https://api.openai.com/v1",
  apiKeyVar: "OPENAI_API_KEY",
  keyOptionalWithBaseUrl: true,
  sendReasoningContent: false,
  userField: "user",
});

function routeFactory(route: RouteDefinition): ProviderFactory {
  return {
    name: route.name,
    async create(config: ProviderConfig): Promise<ModelProvider> {
      const impl = await import("./openai-compatible/index.js");
      // Throws ProviderUnavailableError naming the variable to set.
      return impl.createOpenAICompatibleProvider(impl.resolveSettings(route, config.env, config));
    },
  };
}

/** The `deepseek` provider: DeepSeek's chat completions API, streamed. */
export const deepseekProvider: ProviderFactory = routeFactory(DEEPSEEK_ROUTE);

/** The `openai` provider: any OpenAI-compatible chat completions server, streamed. */
export const openaiProvider: ProviderFactory = routeFactory(OPENAI_ROUTE);
