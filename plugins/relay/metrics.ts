/** Relay metrics (docs/design.md#metrics: the relay's job counters and durations). */
import type { Metrics } from "../../core/metrics.ts";

/**
 * completed / failed / cancelled: the job's terminal status, set by this relay.
 * retried: the attempt failed transiently; the job waits for its retry (services[].retry).
 * skipped: claimed but not run (cancelled while queued, record expired or purged).
 * requeued: given back to its queue because the relay stopped.
 * lost: another relay holds the lease now (this relay stalled past relay.lease_seconds).
 */
export type RelayOutcome = "completed" | "failed" | "cancelled" | "retried" | "skipped" | "requeued" | "lost";

export interface RelayMetrics {
  outcome(model: string, outcome: RelayOutcome): void;
  inference(model: string, seconds: number): void;
  /** A retry was scheduled; `reason` is "network", "timeout" or the backend's status code. */
  retry(model: string, reason: string): void;
}

export function relayMetrics(metrics: Metrics): RelayMetrics {
  const jobs = metrics.counter({
    name: "svc_relay_jobs_total",
    help: "Jobs a relay handled, by model and outcome (completed, failed, cancelled, retried, skipped, requeued, lost)",
    labelNames: ["model", "outcome"],
  });
  const duration = metrics.histogram({
    name: "svc_relay_inference_duration_seconds",
    help: "Time from the relay's backend request to the end of the answer, by model",
    labelNames: ["model"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
  });
  const retries = metrics.counter({
    name: "svc_relay_job_retries_total",
    help: "Job retries scheduled after a transient failure (services[].retry), by model and reason (network, timeout, or the backend's status code)",
    labelNames: ["model", "reason"],
  });
  return {
    retry: (model, reason) => retries.inc({ model, reason }),
    outcome: (model, outcome) => jobs.inc({ model, outcome }),
    inference: (model, seconds) => duration.observe({ model }, seconds),
  };
}
