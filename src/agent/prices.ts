/**
 * The built-in price table: what DeepSeek charges for its models, in US dollars per million
 * tokens (input served from the prompt cache, input not served from it, output). The one place
 * these figures live; `initialize.prices` replaces them for any model.
 *
 * Source: DeepSeek's "Models & Pricing" page, https://api-docs.deepseek.com/quick_start/pricing,
 * read on 2026-12-06 (the page version that lists `deepseek-flash` as DeepSeek-V4.1-Flash-1017
 * and `deepseek-v4-pro` as DeepSeek-V4-Pro-0813). It says: the legacy names `deepseek-v4-flash`
 * (and before it `deepseek-chat` and `deepseek-reasoner`) are served by the Flash model and
 * billed at Flash prices; off-peak rates are half the peak rates; peak hours are 01:00-04:00
 * and 06:00-10:00 UTC, Monday to Friday, except Chinese public holidays.
 *
 * Why the peak rates: whether a request was billed at the peak or off-peak rate depends on a
 * holiday calendar the bridge cannot know, so the one figure it can report without guessing is
 * the most the request can have cost. `costUsd` is therefore an upper bound (exact in peak
 * hours, twice the bill off-peak), and a `maxCostUsd` budget never lets a turn spend more than
 * its limit. A client that knows it runs off-peak passes the off-peak rates as
 * `initialize.prices`.
 *
 * Only the `deepseek` route gets the table: the same model name behind another gateway has
 * that gateway's prices, which the bridge does not know (no `costUsd` then, unless
 * `initialize.prices` gives them).
 *
 * @module
 */
import type { Prices } from "../protocol/index.js";

/** When the table below was read from its source. */
export const PRICES_READ_ON = "2026-12-06";
export const PRICES_SOURCE = "https://api-docs.deepseek.com/quick_start/pricing";

const FLASH: Prices = { cacheHitPerMTok: 0.006, inputPerMTok: 0.3, outputPerMTok: 1.2 };
const PRO: Prices = { cacheHitPerMTok: 0.044, inputPerMTok: 1.32, outputPerMTok: 3.96 };

/** DeepSeek's model names (as sent in a request) → their peak prices. */
export const DEEPSEEK_PRICES: ReadonlyMap<string, Prices> = new Map([
  ["deepseek-flash", FLASH],
  ["deepseek-v4-flash", FLASH],
  ["deepseek-chat", FLASH],
  ["deepseek-reasoner", FLASH],
  ["deepseek-v4-pro", PRO],
]);

/** The prices a runtime bills with: `initialize.prices` when given, else the table's for a DeepSeek model; `undefined`: unknown. */
export function pricesFor(provider: string, model: string, given?: Prices): Prices | undefined {
  if (given) return given;
  return provider === "deepseek" ? DEEPSEEK_PRICES.get(model) : undefined;
}
