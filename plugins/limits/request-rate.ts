/**
 * Request rate (docs/design.md#request-rate): a fixed window per consumer per service type, opened
 * by the first request and counted atomically; the request that makes the count exceed `rate`
 * and every later one in the window get 429. `rate: 0` is unlimited and touches nothing.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { errors } from "../../core/errors.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { failOpen, type LimitDeps, retryAfterSeconds } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import type { TypeLimits } from "./table.ts";

export async function checkRequestRate(
  deps: LimitDeps,
  serviceType: string,
  consumer: string,
  userType: string | undefined,
  limits: TypeLimits,
): Promise<void> {
  if (limits.rate === 0) return;
  let count: number;
  let ttlMs: number;
  try {
    [count, ttlMs] = await deps.kv.run(windowIncrement, [limitKeys.rate(serviceType, consumer)], [1, limits.periodMs]);
  } catch (error) {
    return failOpen(deps, "rate", "request_rate", serviceType, error);
  }
  judgeRequestRate(deps, serviceType, userType, limits, count, ttlMs);
}

/** The verdict on a counted request: `count` requests in a window with `ttlMs` left. Throws the 429. */
export function judgeRequestRate(deps: LimitDeps, serviceType: string, userType: string | undefined, limits: TypeLimits, count: number, ttlMs: number): void {
  const label = deps.table.userTypeLabel(userType);
  if (count <= limits.rate) {
    deps.metrics.rate(serviceType, label, "allowed", false);
    return;
  }
  deps.metrics.rate(serviceType, label, "rejected", count === limits.rate + 1);
  const retryAfter = retryAfterSeconds(ttlMs, limits.periodMs);
  throw errors.rateLimitExceeded(
    `request rate limit reached for service type "${serviceType}": ${limits.rate} requests per ${formatDuration(limits.periodMs)}; retry in ${
      Math.ceil(retryAfter)
    }s, when the window resets`,
    retryAfter,
  );
}
