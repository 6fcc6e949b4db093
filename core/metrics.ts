/**
 * Prometheus metrics (prom-client). One registry lives for the whole process and
 * survives hot reloads, so a counter keeps counting when a new runtime is built; that is
 * why metrics are get-or-create by name.
 */
import client from "prom-client";

let processCollectors: client.Registry | undefined;

/**
 * prom-client's default collectors (`process_*`, `nodejs_*`), started once per process on a
 * registry of their own: they observe the process, not a gateway, and prom-client cannot
 * register them twice on one registry nor stop them. Each `Metrics` that wants them registers
 * the same metric objects. They read the runtime through its Node API (`process`, `perf_hooks`,
 * `/proc`), which Deno 2 provides too: every collector works there (checked on Deno 2.9).
 */
function processRegistry(): client.Registry {
  if (!processCollectors) {
    processCollectors = new client.Registry();
    // The event-loop delay sampler's timer wakes the process every interval, busy or idle:
    // prom-client's 10 ms cost an idle gateway 8 to 10 ms of CPU a second (docs/operations.md).
    client.collectDefaultMetrics({ register: processCollectors, eventLoopMonitoringPrecision: 100 });
  }
  return processCollectors;
}

export type Labels = Record<string, string | number>;

export interface CounterSpec {
  name: string;
  help: string;
  labelNames?: readonly string[];
  /**
   * How the values of several worker processes combine on `/metrics` (prom-client's
   * aggregators): "sum" (default) for what each process counts or holds itself, "max" for a
   * value every process reads from the shared store, or a flag any of them may raise.
   */
  aggregator?: client.Aggregator;
}

/** A registry's series as plain data (prom-client's `getMetricsAsJSON`), for another process to combine. */
export type MetricsSnapshot = Awaited<ReturnType<client.Registry["getMetricsAsJSON"]>>;

export interface HistogramSpec extends CounterSpec {
  buckets?: number[];
}

export class Metrics {
  readonly registry = new client.Registry();

  /**
   * A counter or gauge with a `collect` callback reads the state of the runtime that registered
   * it at each scrape; a reload registers again, and the newest runtime's callback replaces the
   * previous one.
   */
  counter(spec: CounterSpec & { collect?: (this: client.Counter<string>) => void | Promise<void> }): client.Counter<string> {
    return this.reuse(spec, () => new client.Counter({ ...spec, labelNames: [...(spec.labelNames ?? [])], registers: [this.registry] }));
  }

  gauge(spec: CounterSpec & { collect?: (this: client.Gauge<string>) => void | Promise<void> }): client.Gauge<string> {
    return this.reuse(spec, () => new client.Gauge({ ...spec, labelNames: [...(spec.labelNames ?? [])], registers: [this.registry] }));
  }

  histogram(spec: HistogramSpec): client.Histogram<string> {
    return this.existing<client.Histogram<string>>(spec.name) ??
      new client.Histogram({ ...spec, labelNames: [...(spec.labelNames ?? [])], registers: [this.registry] });
  }

  /**
   * Shows (or hides) the process and runtime series: memory, CPU, start time, file descriptors,
   * event-loop lag, heap, GC (`metrics.default_metrics`). They are read when scraped; the only
   * continuous work is the event-loop delay sampler and the GC observer, once per process.
   */
  processMetrics(enabled: boolean): void {
    if (!enabled && !processCollectors) return; // never shown: nothing to hide, nothing to start
    const shared = processRegistry();
    for (const { name } of shared.getMetricsAsArray()) {
      const shown = this.registry.getSingleMetric(name) !== undefined;
      const metric = shared.getSingleMetric(name);
      if (enabled && !shown && metric) this.registry.registerMetric(metric);
      if (!enabled && shown) this.registry.removeSingleMetric(name);
    }
  }

  contentType(): string {
    return this.registry.contentType;
  }

  /** What `/metrics` answers: this process's series, or what `answerWith` gives. */
  async text(): Promise<string> {
    return this.source ? await this.source() : await this.registry.metrics();
  }

  /** This process's own series as data, whatever `answerWith` says. */
  async snapshot(): Promise<MetricsSnapshot> {
    return await this.registry.getMetricsAsJSON();
  }

  /**
   * Has `text()` answer from `source` (same content type): a worker process answers the sum of
   * every worker's series (adapters/workers), which it gathers from their `snapshot()`s.
   */
  answerWith(source: () => Promise<string>): void {
    this.source = source;
  }

  private source: (() => Promise<string>) | undefined;

  /** The metric already registered under the name (its `collect` replaced when one is given), else a new one. */
  private reuse<T>(spec: { name: string; collect?: unknown }, create: () => T): T {
    const existing = this.existing<T & { collect?: unknown }>(spec.name);
    if (!existing) return create();
    if (spec.collect) existing.collect = spec.collect;
    return existing;
  }

  private existing<T>(name: string): T | undefined {
    return this.registry.getSingleMetric(name) as T | undefined;
  }
}
