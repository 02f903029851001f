/**
 * The registered providers. Factories are light; each loads its heavy modules when created.
 */
import { deepseekProvider, openaiProvider } from "./deepseek.js";
import { scriptedProvider } from "./scripted.js";
import type { ProviderFactory } from "./types.js";

export const PROVIDERS: ReadonlyMap<string, ProviderFactory> = new Map(
  [deepseekProvider, openaiProvider, scriptedProvider].map((factory) => [factory.name, factory]),
);
