/**
 * Token budget, sync LLM requests only. Tokens are counted after the response
 * from the `llm.usage` event, so a request is checked against what earlier requests used:
 * the one that crosses the budget passes, later ones in the window get 429. With
 * `llm.reserve_token_budgets`, what requests in flight hold (hold.ts) counts too. The model's
 * `token_limits` budget is checked before the service type's `rate_limits` one; both
 * must pass. The LLM proxy emits no event for cache hits, usage-less answers or (unless
 * `llm.count_streamed_tokens`) streams, and marks `Cache-Control: no-cache` requests
 * `counted: false`.
 */
import { formatDuration } from "../../core/config/duration.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, type GatewayError } from "../../core/errors.ts";
import { HELD_RETRY_SECONDS } from "../../core/limits/budget-hold.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { failOpen, type LimitDeps, retryAfterSeconds } from "./deps.ts";
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
export function tokenBudgets(
  table: LimitTable,
  service: Pick<ServiceConfig, "type" | "model">,
  consumer: string,
  userType: string | undefined,
  typeLimits: TypeLimits | undefined,
): Budget[] {
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
 * Model budget first, then the type's. `reply` holds each budget's counter, its remaining ms
 * and what is held of it from `at` on, as `limitsAdmit` answers. Throws the 429.
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
    const reading = at + 3 * index;
    const used = Number(reply[reading] || 0);
    const held = Number(reply[reading + 2] || 0);
    if (used + held < budget.rate) continue;
    deps.metrics.tokens(serviceType, label, "rejected");
    throw tokenRefusal(budget.scope, used, held, budget.rate, budget.periodMs, Number(reply[reading + 1]));
  }
  deps.metrics.tokens(serviceType, label, "allowed");
}

/**
 * The 429 of a token budget refused with `used` counted and `held` by requests in flight:
 * until the window resets when what was used reached the rate, else (only the holds stand in
 * the way) for a moment, since the holds end with their requests.
 */
export function tokenRefusal(scope: string, used: number, held: number, rate: number, periodMs: number, pttlMs: number): GatewayError {
  const per = `${rate} tokens per ${formatDuration(periodMs)}`;
  if (used < rate) {
    return errors.budgetExceeded(
      `token budget of ${scope} is held by requests in flight: ${used} used and ${held} held of ${per}; retry in ${HELD_RETRY_SECONDS}s, when their answers are counted`,
      HELD_RETRY_SECONDS,
    );
  }
  const retryAfter = retryAfterSeconds(pttlMs, periodMs);
  return errors.budgetExceeded(`token budget of ${scope} used up: ${used} of ${per}; retry in ${Math.ceil(retryAfter)}s, when the window resets`, retryAfter);
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
  const counted = list.length === 1
    ? deps.kv.run(windowIncrement, [list[0].key], [tokens, list[0].periodMs])
    : Promise.all(list.map((b) => deps.kv.run(windowIncrement, [b.key], [tokens, b.periodMs])));
  counted.then(undefined, (error: unknown) => failOpen(deps, "tokens", "token_count", event.serviceType, error));
}
