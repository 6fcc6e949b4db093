/**
 * Processing-time budget (docs/design.md#processing-time): inference seconds the relay reports
 * (`relay.processed`, which names the job's consumer and user type) accumulate per
 * consumer per service type in a fixed window of `processing_period`, opened by the first
 * report. A submission is refused once the window holds `processing_time` seconds or more,
 * so the job that crosses the budget still runs.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { GatewayEvents } from "../../core/plugins/types.ts";
import { windowIncrementFloat } from "../../core/stores/atomic-ops.ts";
import type {} from "../../core/jobs/types.ts";
import { failOpen, type LimitDeps, retryAfterSeconds } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { windowPeek } from "./ops.ts";
import type { TypeLimits } from "./table.ts";

export const LIMIT_HEADER = "x-processingtime-limit";
export const REMAINING_HEADER = "x-processingtime-remaining";

/** Seconds as headers and messages show them: at most millisecond precision, no float noise. */
export const formatSeconds = (seconds: number): string => String(Math.round(seconds * 1000) / 1000);

export async function checkProcessingTime(deps: LimitDeps, ctx: RequestContext, consumer: string, limits: TypeLimits): Promise<void> {
  if (limits.processingTime === 0) return;
  let used: number;
  let ttlMs: number;
  try {
    const [value, ttl] = await deps.kv.run(windowPeek, [limitKeys.processingTime(ctx.serviceType, consumer)], []);
    used = Number(value || 0);
    ttlMs = Number(ttl);
  } catch (error) {
    return failOpen(deps, "rate", "processing_time", ctx.serviceType, error);
  }
  ctx.responseHeaders.set(LIMIT_HEADER, String(limits.processingTime));
  ctx.responseHeaders.set(REMAINING_HEADER, formatSeconds(Math.max(0, limits.processingTime - used)));
  if (used < limits.processingTime) return;
  const retryAfter = retryAfterSeconds(ttlMs, limits.processingPeriodMs);
  throw errors.budgetExceeded(
    `processing-time budget used up for service type "${ctx.serviceType}": ${formatSeconds(used)} of ${limits.processingTime} inference seconds per ${
      formatDuration(limits.processingPeriodMs)
    }; retry in ${Math.ceil(retryAfter)}s, when the window resets`,
    retryAfter,
  );
}

export async function addProcessingTime(deps: LimitDeps, event: GatewayEvents["relay.processed"]): Promise<void> {
  const consumer = event.consumer;
  if (consumer === undefined || consumer === "" || !(event.seconds > 0)) return;
  const limits = deps.table.forType(event.serviceType, event.userType);
  if (!limits || limits.processingTime === 0) return;
  try {
    await deps.kv.run(windowIncrementFloat, [limitKeys.processingTime(event.serviceType, consumer)], [event.seconds, limits.processingPeriodMs]);
  } catch (error) {
    failOpen(deps, "rate", "processing_time", event.serviceType, error);
  }
}
