/**
 * GC metrics (docs/design.md#metrics). The registry outlives reloads, so these keep counting across
 * them.
 */
import type { Metrics } from "../../core/metrics.ts";

export type ReapedOutcome = "requeued" | "deadletter";
export type QueueState = "pending" | "processing";

export interface GcMetrics {
  reaped(model: string, outcome: ReapedOutcome): void;
  orphansSwept(model: string, state: QueueState, count: number): void;
}

export function gcMetrics(metrics: Metrics): GcMetrics {
  const reaped = metrics.counter({
    name: "svc_async_jobs_reaped_total",
    help: "Processing jobs whose relay lease expired, reclaimed by the GC reaper, by model and outcome (requeued or deadletter)",
    labelNames: ["model", "outcome"],
  });
  const swept = metrics.counter({
    name: "svc_relay_queue_orphans_swept_total",
    help: "Queue entries whose job record had expired, removed by the GC, by model and state (pending or processing)",
    labelNames: ["model", "state"],
  });
  return {
    reaped: (model, outcome) => reaped.inc({ model, outcome }),
    orphansSwept: (model, state, count) => swept.inc({ model, state }, count),
  };
}
