/**
 * A model request's cost in US dollars (`usage.costUsd`), and a turn's budget
 * (`session/prompt.maxCostUsd`).
 *
 * Invariants:
 * - A cost is computed only from prices someone stated (prices.ts or `initialize.prices`) and
 *   the token counts the provider reported: no prices, no `costUsd` (never an estimate).
 * - Cache-hit input is priced at the cache-hit rate, the rest of the input (the reported
 *   cache misses, else input less hits) at the input rate, output (reasoning included, as
 *   DeepSeek counts it) at the output rate.
 * - Figures are rounded to 1e-12 dollars, so sums do not show float noise (0.30000000000000004)
 *   and every reader of the log sees the same numbers.
 *
 * @module
 */
import type { BudgetReason, Prices, Usage } from "../protocol/index.js";

const PER_TOKEN = 1 / 1_000_000;

/** Rounds a dollar figure to 1e-12 (see the module's invariants). */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e12) / 1e12;
}

/** `usage` with its `costUsd` when `prices` are known; the same object otherwise. */
export function withCost(usage: Usage | undefined, prices: Prices | undefined): Usage | undefined {
  if (!usage || !prices) return usage;
  const hits = usage.cacheHitTokens ?? 0;
  const misses = usage.cacheMissTokens ?? Math.max(0, usage.inputTokens - hits);
  const cost = hits * (prices.cacheHitPerMTok ?? prices.inputPerMTok) + misses * prices.inputPerMTok + usage.outputTokens * prices.outputPerMTok;
  return { ...usage, costUsd: roundUsd(cost * PER_TOKEN) };
}

/**
 * One prompt's budget (`maxCostUsd`), shared by its turn and every subagent that turn starts
 * (`task`, at any depth): their requests are paid for by the same prompt, so they spend the
 * same budget. Were a subagent's turn unbudgeted, one `task` call — or many — would let the
 * turn spend without bound while the client believes it bounded.
 *
 * `spentUsd` sums every priced request of the turn and its subagents; `unknown`: a request
 * answered without reporting usage, so its cost (perhaps the whole budget) is not known.
 * Either way, once `reached`, no further request of the turn or its subagents starts.
 */
export class TurnBudget {
  spentUsd = 0;
  unknown = false;

  constructor(readonly limitUsd: number) {}

  /** A request ran (`answered`: the model streamed something back) and reported `usage` (priced, or not). */
  charge(answered: boolean, usage: Usage | undefined): void {
    if (usage?.costUsd !== undefined) this.spentUsd = roundUsd(this.spentUsd + usage.costUsd);
    else if (answered) this.unknown = true;
  }

  /** Why no further request may start; `undefined`: under budget. */
  reached(): BudgetReason | undefined {
    return this.spentUsd >= this.limitUsd || this.unknown ? { kind: "budget", limitUsd: this.limitUsd, costUsd: this.spentUsd } : undefined;
  }
}
