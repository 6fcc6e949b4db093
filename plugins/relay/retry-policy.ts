/**
 * services[].retry for async jobs: whether a failed attempt runs again, and after how long.
 *
 * Transient failures are retried: a network error, relay.request_timeout, or a backend
 * status listed in `on_statuses`. Everything else (another 4xx, a result that cannot be
 * read as declared, a missing input file) is final. The delay before retry n is
 * `backoff` doubled n-1 times, or the backend's Retry-After when that is longer, both
 * capped by `max_backoff`.
 */
import { durationMs } from "../../core/config/duration.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { retryDelayMs } from "../../core/backoff.ts";

/** Why an attempt failed in a way worth trying again; `reason` labels svc_relay_job_retries_total. */
export interface TransientFailure {
  /** "network", "timeout", or the backend's status code ("503"). */
  reason: string;
  /** The backend's Retry-After, in ms from when it answered. */
  retryAfterMs?: number;
}

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
  onStatuses: readonly number[];
}

export function retryPolicyOf(service: ServiceConfig): RetryPolicy {
  const retry = service.retry;
  return {
    maxAttempts: retry.max_attempts,
    backoffMs: durationMs(retry.backoff),
    maxBackoffMs: durationMs(retry.max_backoff),
    onStatuses: retry.on_statuses,
  };
}

/** The delay after failed attempt number `attempts` (1 = the first attempt failed). */
export function retryDelay(policy: RetryPolicy, attempts: number, failure: TransientFailure): number {
  const backoff = retryDelayMs(attempts, policy.backoffMs, policy.maxBackoffMs);
  return Math.min(Math.max(backoff, failure.retryAfterMs ?? 0), policy.maxBackoffMs);
}
