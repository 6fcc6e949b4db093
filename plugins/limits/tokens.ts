/**
 * Token budget (spec 8.2), sync LLM requests only. Tokens are counted after the response
 * from the `llm.usage` event, so a request is checked against what earlier requests used:
 * the one that crosses the budget passes, later ones in the window get 429. The model's
 * `token_limits` budget is checked before the service type's `rate_limits` one; both
 * must pass. The LLM proxy emits no event for cache hits, usage-less answers or (unless
 * `llm.count_streamed_tokens`) streams, and marks `Cache-Control: no-cache` requests
 * `counted: false`.
 */
import { formatDuration } from "../../core/config/duration.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { failOpen, retryAfterSeconds, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import type { LimitTable, TypeLimits } from "./table.ts";

export interface Budget {
  key: string;
  rate: number;
  periodMs: number;
  entry: string;
  /** Who the budget belongs to, for the 429 message. */
  scope: string;
}

/** The model's budget (`token_limits`), then the service type's (`rate_limits`), that measure this consumer (measures.ts keeps them). */
export function tokenBudgets(table: LimitTable, service: Pick<ServiceConfig, "type" | "model">, consumer: string, userType: string | undefined, typeLimits: TypeLimits | undefined): Budget[] {
  const out: Budget[] = [];
  const model = table.forModel(service, userType);
  if (model) {
    out.push({
      key: limitKeys.modelTokens(service.type, consumer, service.model),
      rate: model.tokenRate,
      periodMs: model.tokenPeriodMs,
      entry: model.entry,
      scope: `model "${service.model}"`,
    });
  }
  if (typeLimits && typeLimits.tokenRate > 0) {
    out.push({
      key: limitKeys.tokens(service.type, consumer),
      rate: typeLimits.tokenRate,
      periodMs: typeLimits.tokenPeriodMs,
      entry: typeLimits.entry,
      scope: `service type "${service.type}"`,
    });
  }
  return out;
}

/**
 * Model budget first, then the type's. `reply` holds each budget's counter and its
 * remaining ms from `at` on, as `windowPeek` answers. Throws the 429.
 */
export function judgeTokens(
  deps: LimitDeps,
  serviceType: string,
  userType: string | undefined,
  list: readonly Budget[],
  reply: readonly (string | number)[],
  at: number,
): void {
  const label = deps.table.userTypeLabel(userType);
  for (let index = 0; index < list.length; index++) {
    const budget = list[index];
    const used = Number(reply[at + 2 * index] || 0);
    if (used < budget.rate) continue;
    deps.metrics.tokens(serviceType, label, "rejected");
    const retryAfter = retryAfterSeconds(Number(reply[at + 2 * index + 1]), budget.periodMs);
    throw errors.rateLimited(
      `token budget of ${budget.scope} used up: ${used} of ${budget.rate} tokens per ${formatDuration(budget.periodMs)}; retry in ${Math.ceil(retryAfter)}s, when the window resets`,
      retryAfter,
    );
  }
  deps.metrics.tokens(serviceType, label, "allowed");
}

/**
 * Adds a response's tokens to every budget that measures it (the crossing request already
 * passed). Nobody waits for it: a promise chain, not an async function (which cost a few
 * hundred bytes per response more).
 */
export function countTokens(deps: LimitDeps, event: LlmUsageEvent): void {
  if (!event.counted || event.consumer === "") return;
  const tokens = Math.round(event.prompt + event.completion);
  if (!(tokens > 0)) return;
  const userType = event.userType === "" ? undefined : event.userType;
  const list = deps.measures.of(event.serviceType, event.model, userType, event.consumer).tokens;
  if (list.length === 0) return;
  // One budget (the usual case) without Promise.all's objects; several share one connection's
  // pipeline, one round trip in practice.
  const counted = list.length === 1 ? deps.kv.run(windowIncrement, [list[0].key], [tokens, list[0].periodMs]) : Promise.all(list.map((b) => deps.kv.run(windowIncrement, [b.key], [tokens, b.periodMs])));
  counted.then(undefined, (error: unknown) => failOpen(deps, "tokens", "token_count", event.serviceType, error));
}
