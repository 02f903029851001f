/**
 * OpenAI-compatible chat completions, streamed: the shared implementation of the `deepseek` and
 * `openai` providers. One concern a file: settings and routes (`settings.ts`), the request body
 * (`wire-messages.ts`), chunk mapping (`chunks.ts`), errors (`errors.ts`), retry and backoff
 * (`retry.ts`), and the provider that opens a response and reads its events (`provider.ts`).
 *
 * Loaded only when a provider is created (`../deepseek.ts` imports it dynamically); undici and
 * eventsource-parser load later still, on the first request.
 *
 * @module
 */
export * from "./settings.js";
export * from "./wire-messages.js";
export * from "./chunks.js";
export { isContextWindowMessage, serverErrorMessage } from "./errors.js";
export { backoffDelay, parseRetryAfter } from "./retry.js";
export { createOpenAICompatibleProvider } from "./provider.js";
