/**
 * What every limit check needs, and the one fail-open rule they share
 * (docs/design.md#failing-open).
 */
import type { Clock } from "../../core/clock.ts";
import { GatewayError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { Pricing } from "../../core/pricing/price.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { MeasuresCache } from "./measures.ts";
import type { LimitMetrics } from "./metrics.ts";
import type { LimitTable } from "./table.ts";

export interface LimitDeps {
  kv: KvStore;
  clock: Clock;
  log: Logger;
  metrics: LimitMetrics;
  table: LimitTable;
  /** What measures each consumer, built from `table` once per consumer. */
  measures: MeasuresCache;
  /** pricing.currency, for cost budget messages. */
  currency: string;
  /** Prices what an LLM request may cost before it is sent (the `pricing` plugin), when some model has a price. */
  pricing: Pricing | undefined;
  /** `llm.reserve_token_budgets`: token budgets hold what requests in flight may use, as dollar budgets do. */
  reserveTokenBudgets: boolean;
  /** `llm.count_streamed_tokens`: a stream's answer is counted, so it holds its budgets while it runs. */
  countStreamedTokens: boolean;
  newId(): string;
}

/**
 * A store error never blocks a request: logged, counted (`svc_ratelimit_errors_total` or
 * `svc_token_ratelimit_errors_total`), and the request passes. Limit answers (a thrown
 * `GatewayError`) are rethrown.
 */
export function failOpen(deps: LimitDeps, kind: "rate" | "tokens", what: string, serviceType: string, error: unknown): void {
  if (error instanceof GatewayError) throw error;
  if (kind === "tokens") deps.metrics.tokenError(serviceType);
  else deps.metrics.rateError(serviceType);
  deps.log.warn("limit_store_error", { limit: what, service_type: serviceType, error, message: "limit not applied (fail open)" });
}

/** Seconds for Retry-After from a window's remaining ms (the whole period when the store reported none). */
export function retryAfterSeconds(pttlMs: number, periodMs: number): number {
  return (pttlMs > 0 ? pttlMs : periodMs) / 1000;
}
