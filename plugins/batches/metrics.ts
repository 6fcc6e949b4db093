/** The batch metrics: batches ended by status, lines ended by model and outcome, lines running per model. */
import type { Metrics } from "../../core/metrics.ts";
import type { EngineEvents } from "./batches/engine.ts";
import type { BatchRecord } from "./batches/record.ts";

export function batchMetrics(metrics: Metrics, onEnded: (batch: BatchRecord) => void): EngineEvents {
  const batches = metrics.counter({
    name: "svc_batches_total",
    help: "Batches that ended, by final status (completed, failed, expired, cancelled)",
    labelNames: ["status"],
  });
  for (const status of ["completed", "failed", "expired", "cancelled"]) batches.inc({ status }, 0);
  const lines = metrics.counter({
    name: "svc_batch_lines_total",
    help: "Batch lines that ended, by model and outcome (succeeded, failed, expired, cancelled)",
    labelNames: ["model", "outcome"],
  });
  const inFlight = metrics.gauge({
    name: "svc_batch_lines_in_flight",
    help: "Batch lines this process is running now, by model",
    labelNames: ["model"],
  });
  return {
    ended(batch) {
      batches.inc({ status: batch.status });
      onEnded(batch);
    },
    line: (model, outcome) => lines.inc({ model, outcome }),
    inFlight: (model, running) => inFlight.set({ model }, running),
  };
}
