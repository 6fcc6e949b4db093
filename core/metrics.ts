/**
 * Prometheus metrics (prom-client). One registry lives for the whole process and
 * survives hot reloads, so a counter keeps counting when a new runtime is built; that is
 * why metrics are get-or-create by name.
 */
import client from "prom-client";

export type Labels = Record<string, string | number>;

export interface CounterSpec {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

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

  contentType(): string {
    return this.registry.contentType;
  }

  async text(): Promise<string> {
    return await this.registry.metrics();
  }

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
