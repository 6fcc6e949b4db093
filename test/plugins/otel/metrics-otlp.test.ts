/** The Prometheus -> OTLP metrics conversion, on a real prom-client registry. */
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { otlpMetrics, type PromMetric } from "../../../plugins/otel/metrics-otlp.ts";

describe("OTLP metrics from the Prometheus registry", () => {
  it("turns counters into cumulative sums, gauges into gauges and cumulative buckets into per-bucket counts", async () => {
    const registry = new client.Registry();
    new client.Counter({ name: "jobs_total", help: "jobs", labelNames: ["model"], registers: [registry] }).inc({ model: "m" }, 3);
    new client.Gauge({ name: "depth", help: "queue depth", registers: [registry] }).set(7);
    const histogram = new client.Histogram({ name: "latency_seconds", help: "latency", labelNames: ["model"], buckets: [0.1, 1], registers: [registry] });
    for (const value of [0.05, 0.5, 0.7, 5]) histogram.observe({ model: "m" }, value);

    const json = (await registry.getMetricsAsJSON()) as unknown as PromMetric[];
    const body = otlpMetrics(json, { "service.name": "gw" }, 1_000, 2_000) as {
      resourceMetrics: Array<
        { scopeMetrics: Array<{ metrics: Array<Record<string, { dataPoints: Array<Record<string, unknown>> } & Record<string, unknown>>> }> }
      >;
    };
    const metrics = Object.fromEntries(body.resourceMetrics[0].scopeMetrics[0].metrics.map((m) => [m.name as unknown as string, m]));

    expect(metrics.jobs_total.sum).toMatchObject({ aggregationTemporality: 2, isMonotonic: true });
    expect(metrics.jobs_total.sum.dataPoints[0]).toMatchObject({
      asDouble: 3,
      attributes: [{ key: "model", value: { stringValue: "m" } }],
      startTimeUnixNano: "1000000000",
      timeUnixNano: "2000000000",
    });
    expect(metrics.depth.gauge.dataPoints[0].asDouble).toBe(7);
    expect(metrics.latency_seconds.histogram.dataPoints).toEqual([
      expect.objectContaining({
        count: "4",
        sum: 6.25,
        explicitBounds: [0.1, 1],
        bucketCounts: ["1", "2", "1"],
        attributes: [{ key: "model", value: { stringValue: "m" } }],
      }),
    ]);
  });
});
