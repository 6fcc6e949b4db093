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

  counter(spec: CounterSpec): client.Counter<string> {
    return this.existing<client.Counter<string>>(spec.name) ??
      new client.Counter({ ...spec, labelNames: [...(spec.labelNames ?? [])], registers: [this.registry] });
  }

  /**
   * A gauge with a `collect` callback reads the state of the runtime that registered it; a
   * reload registers again, and the newest runtime's callback replaces the previous one.
   */
  gauge(spec: CounterSpec & { collect?: (this: client.Gauge<string>) => void | Promise<void> }): client.Gauge<string> {
    const existing = this.existing<client.Gauge<string> & { collect?: unknown }>(spec.name);
    if (existing) {
      if (spec.collect) existing.collect = spec.collect;
      return existing;
    }
    return new client.Gauge({ ...spec, labelNames: [...(spec.labelNames ?? [])], registers: [this.registry] });
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

  private existing<T>(name: string): T | undefined {
    return this.registry.getSingleMetric(name) as T | undefined;
  }
}
