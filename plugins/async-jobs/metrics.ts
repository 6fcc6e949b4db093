/**
 * Async job metrics (docs/design.md#metrics): submissions by consumer and the relay queue depth.
 *
 * `svc_jobs_by_consumer_total` counts every accepted submission (replays excluded), and
 * only when `server.consumer_header` is configured (docs/design.md#consumers-and-ownership: it is
 * part of consumer identification). Its `consumer` label carries the consumer name only when
 * `metrics.consumer_labels` is on (the spec reserves that for fewer than 50 consumers);
 * otherwise it is "", so the series count stays bounded whatever callers send in the
 * consumer header.
 */
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Metrics } from "../../core/metrics.ts";

export interface SubmissionCounter {
  submitted(labels: { priority: boolean; serviceType: string; model: string; consumer?: string }): void;
}

export function submissionCounter(metrics: Metrics, config: GatewayConfig, withConsumer: boolean): SubmissionCounter {
  const counter = metrics.counter({
    name: "svc_jobs_by_consumer_total",
    help: "Async jobs accepted, by mode (async or async-priority), service type, model and consumer (consumer only with metrics.consumer_labels)",
    labelNames: ["mode", "service_type", "model", "consumer"],
  });
  const identifying = config.server.consumer_header !== "";
  return {
    submitted({ priority, serviceType, model, consumer }) {
      if (!identifying) return;
      counter.inc({
        mode: priority ? "async-priority" : "async",
        service_type: serviceType,
        model,
        consumer: withConsumer ? (consumer ?? "") : "",
      });
    },
  };
}

/**
 * The runtime whose queues the depth gauge reports. Metrics outlive hot reloads (the gauge
 * is created once per registry) while the service list is per runtime, so the gauge reads
 * through this map and each runtime points it at itself.
 */
const depthSources = new WeakMap<Metrics, () => Promise<number>>();

/** Registers (once) `svc_relay_queue_depth`, computed on scrape; returns the unregister function. */
export function reportQueueDepth(metrics: Metrics, depth: () => Promise<number>): () => void {
  depthSources.set(metrics, depth);
  metrics.gauge({
    name: "svc_relay_queue_depth",
    help: "Jobs waiting in the relay queues (relay:<model>), summed over every model",
    // Read from the shared store by every worker: the same value, not a share of it.
    aggregator: "max",
    async collect() {
      const source = depthSources.get(metrics);
      if (!source) return;
      try {
        this.set(await source());
      } catch {
        // Keep the last value: a scrape must not fail because the KV store is down (its error counter says so).
      }
    },
  });
  return () => {
    if (depthSources.get(metrics) === depth) depthSources.delete(metrics);
  };
}
