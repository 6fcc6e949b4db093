/**
 * Per-group quotas (docs/design.md#access-policies): the limits of the rule that allowed a request
 * give each member, keyed by consumer, a request rate and a token budget on the sync LLM path, on
 * top of the global limits. Fixed windows in the shared store, so every replica counts
 * against the same budget. Store errors fail open (docs/design.md#failing-open): logged, the
 * request passes.
 *
 * Keys: `quota:req:<rule index>:<consumer>` and `quota:tok:<rule index>:<consumer>`.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { errors, GatewayError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { StageStep } from "../../core/pipeline/pipeline.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { RuleLimits } from "./rules.ts";
import type { TokenAttribution } from "./token-attribution.ts";

/** What the policy stage hands the limits stage about the rule that allowed the request. */
export interface QuotaTarget {
  ruleIndex: number;
  limits: RuleLimits;
}

declare module "../../core/pipeline/context.ts" {
  interface RequestVars {
    /** Set by the policies plugin when the allowing rule carries `limits`. */
    policyQuota: QuotaTarget;
  }
}

export const requestKey = (ruleIndex: number, consumer: string) => `quota:req:${ruleIndex}:${consumer}`;
export const tokenKey = (ruleIndex: number, consumer: string) => `quota:tok:${ruleIndex}:${consumer}`;

export function quotaStep(kv: KvStore, log: Logger, attribution: TokenAttribution): StageStep {
  return async function enforceGroupQuota(ctx) {
    const target = ctx.vars.policyQuota;
    const consumer = ctx.principal.consumer;
    // Sync LLM path only; anonymous callers have no budget to count against.
    if (!target || ctx.mode !== "llm" || consumer === undefined) return;
    const { ruleIndex, limits } = target;
    try {
      // A batch line is held to the quota's tokens, not to its request rate.
      if (limits.rate > 0 && ctx.origin !== "batch") {
        const [count, ttlMs] = await kv.run(windowIncrement, [requestKey(ruleIndex, consumer)], [1, limits.periodMs]);
        if (count > limits.rate) {
          throw errors.rateLimitExceeded(
            `group quota of policies.rules[${ruleIndex}] exceeded: ${limits.rate} requests per ${
              formatDuration(limits.periodMs)
            }; retry after the window resets`,
            ttlMs / 1000,
          );
        }
      }
      if (limits.tokenRate > 0) {
        const key = tokenKey(ruleIndex, consumer);
        const used = Number((await kv.get(key)) ?? "0");
        if (used >= limits.tokenRate) {
          const ttlMs = await kv.pttl(key);
          throw errors.budgetExceeded(
            `group token quota of policies.rules[${ruleIndex}] exceeded: ${limits.tokenRate} tokens per ${
              formatDuration(limits.tokenPeriodMs)
            }; retry after the window resets`,
            (ttlMs > 0 ? ttlMs : limits.tokenPeriodMs) / 1000,
          );
        }
      }
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      log.warn("group_quota_store_error", { rule: ruleIndex, error, message: "group quota not checked (fail open)" });
    }
    // The response's tokens arrive later, in an `llm.usage` event naming no rule.
    if (limits.tokenRate > 0 && ctx.service) ctx.defer(attribution.enter(consumer, ctx.service.type, ctx.service.model, target));
  };
}

/**
 * Adds a response's tokens to the member's budget; the request that crosses it passes
 * (docs/design.md#token-budget).
 */
export async function countTokens(kv: KvStore, log: Logger, target: QuotaTarget, consumer: string, tokens: number): Promise<void> {
  if (target.limits.tokenRate === 0 || !(tokens > 0)) return;
  try {
    await kv.run(windowIncrement, [tokenKey(target.ruleIndex, consumer)], [Math.round(tokens), target.limits.tokenPeriodMs]);
  } catch (error) {
    log.warn("group_quota_store_error", { rule: target.ruleIndex, error, message: "tokens not counted (fail open)" });
  }
}
