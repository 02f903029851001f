/**
 * A turn's usage: the sum of its model requests' (its steps', and a compaction's summarizing
 * request's). A count that no request reported stays absent rather than becoming 0.
 *
 * @module
 */
import type { Usage } from "../protocol/index.js";
import { roundUsd } from "./cost.js";

/** `total` plus `step`; either may be absent. */
export function addUsage(total: Usage | undefined, step: Usage | undefined): Usage | undefined {
  if (!step) return total;
  if (!total) return { ...step };
  const sum: Usage = { inputTokens: total.inputTokens + step.inputTokens, outputTokens: total.outputTokens + step.outputTokens };
  if (total.reasoningTokens !== undefined || step.reasoningTokens !== undefined) {
    sum.reasoningTokens = (total.reasoningTokens ?? 0) + (step.reasoningTokens ?? 0);
  }
  if (total.cacheHitTokens !== undefined || step.cacheHitTokens !== undefined) {
    sum.cacheHitTokens = (total.cacheHitTokens ?? 0) + (step.cacheHitTokens ?? 0);
  }
  if (total.cacheMissTokens !== undefined || step.cacheMissTokens !== undefined) {
    sum.cacheMissTokens = (total.cacheMissTokens ?? 0) + (step.cacheMissTokens ?? 0);
  }
  if (total.costUsd !== undefined || step.costUsd !== undefined) {
    sum.costUsd = roundUsd((total.costUsd ?? 0) + (step.costUsd ?? 0));
  }
  return sum;
}
