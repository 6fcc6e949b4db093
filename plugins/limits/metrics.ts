/**
 * The limit series (docs/design.md#metrics). `user_type` is the caller's user type when the limits
 * config names it, else "*" (LimitTable.userTypeLabel), the same on all three series, so
 * its values are bounded by the config rather than by whatever user type header clients
 * send.
 */
import { counterChildren } from "../../core/metric-labels.ts";
import type { Metrics } from "../../core/metrics.ts";

export type CheckResult = "allowed" | "rejected";

export interface LimitMetrics {
  /**
   * A request-rate check (docs/design.md#request-rate). `firstHit`: this request is the first one
   * over the limit in its window.
   */
  rate(serviceType: string, userType: string, result: CheckResult, firstHit: boolean): void;
  /** A token-budget check of a sync LLM request (docs/design.md#token-budget). */
  tokens(serviceType: string, userType: string, result: CheckResult): void;
  /** A store error on a request-rate, concurrency, processing-time or sync-cap check or count (the request passed). */
  rateError(serviceType: string): void;
  /** A store error on a token check or count (the request passed). */
  tokenError(serviceType: string): void;
}

export function limitMetrics(metrics: Metrics): LimitMetrics {
  const requests = metrics.counter({
    name: "svc_ratelimit_requests_total",
    help: "Request-rate checks, by service type, user type (the caller's when the limits config names it, else *) and result (allowed or rejected)",
    labelNames: ["service_type", "user_type", "result"],
  });
  const consumerHits = metrics.counter({
    name: "svc_ratelimit_consumer_hits_total",
    help: "Times a consumer reached its request rate: counted once per consumer and window, on the first rejected request",
    labelNames: ["service_type", "user_type"],
  });
  const errors = metrics.counter({
    name: "svc_ratelimit_errors_total",
    help: "Limit checks skipped because the key-value store failed (the request passed: fail open)",
    labelNames: ["service_type"],
  });
  const tokenChecks = metrics.counter({
    name: "svc_token_ratelimit_checked_total",
    help: "Token-budget checks of sync LLM requests, by service type, user type (the caller's when the limits config names it, else *) and result",
    labelNames: ["service_type", "user_type", "result"],
  });
  const tokenErrors = metrics.counter({
    name: "svc_token_ratelimit_errors_total",
    help: "Token-budget checks or counts skipped because the key-value store failed (fail open)",
    labelNames: ["service_type"],
  });
  // Checked on every limited request: series prepared once (core/metric-labels.ts).
  const requestsFor = counterChildren(requests);
  const tokenChecksFor = counterChildren(tokenChecks);
  return {
    rate(serviceType, userType, result, firstHit) {
      requestsFor({ service_type: serviceType, user_type: userType, result }).inc();
      if (firstHit) consumerHits.inc({ service_type: serviceType, user_type: userType });
    },
    tokens(serviceType, userType, result) {
      tokenChecksFor({ service_type: serviceType, user_type: userType, result }).inc();
    },
    rateError(serviceType) {
      errors.inc({ service_type: serviceType });
    },
    tokenError(serviceType) {
      tokenErrors.inc({ service_type: serviceType });
    },
  };
}
