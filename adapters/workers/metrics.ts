/**
 * The series of the gateway's processes: `svc_workers` (worker processes serving now) and
 * `svc_worker_restarts_total`. A single gateway process reports itself (1, and no restart);
 * with `server.workers` above 1 the primary reports them, and `/metrics` on any worker sums
 * every worker's series with the primary's (prom-client's `AggregatorRegistry.aggregate`).
 */
import client from "prom-client";
import type { Metrics, MetricsSnapshot } from "../../core/metrics.ts";

export interface WorkerMetrics {
  restarted(): void;
}

export function workerMetrics(metrics: Metrics, serving: () => number): WorkerMetrics {
  metrics.gauge({
    name: "svc_workers",
    help: "Gateway worker processes serving now (server.workers; 1 for a gateway run as one process)",
    collect() {
      this.set(serving());
    },
  });
  const restarts = metrics.counter({
    name: "svc_worker_restarts_total",
    help: "Gateway worker processes started again after one exited unexpectedly",
  });
  restarts.inc(0);
  return { restarted: () => restarts.inc() };
}

/** Prometheus text of the series of several processes, each combined by its metric's aggregator (sum unless it says otherwise). */
export async function sumOfProcesses(snapshots: readonly MetricsSnapshot[]): Promise<string> {
  return await client.AggregatorRegistry.aggregate(snapshots as MetricsSnapshot[]).metrics();
}
