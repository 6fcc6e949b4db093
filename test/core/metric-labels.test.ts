import { describe, expect, it } from "vitest";
import { counterChildren, histogramChildren } from "../../core/metric-labels.ts";
import { Metrics } from "../../core/metrics.ts";

async function series(metrics: Metrics, name: string): Promise<string[]> {
  return (await metrics.text()).split("\n").filter((line) => line.startsWith(`${name}{`));
}

describe("counterChildren", () => {
  it("counts every increment of a prepared series, per label set", async () => {
    const metrics = new Metrics();
    const counter = metrics.counter({ name: "t_prepared_total", help: "t", labelNames: ["a", "b"] });
    const of = counterChildren(counter);
    for (let i = 0; i < 3; i++) of({ a: "x", b: "1" }).inc();
    of({ a: "x", b: "1" }).inc(5);
    of({ a: "y", b: "2" }).inc(2);
    expect(await series(metrics, "t_prepared_total")).toEqual(['t_prepared_total{a="x",b="1"} 8', 't_prepared_total{a="y",b="2"} 2']);
  });

  it("keeps counting after the counter is reset, and refuses what prom-client refuses", async () => {
    const metrics = new Metrics();
    const counter = metrics.counter({ name: "t_reset_total", help: "t", labelNames: ["a"] });
    const of = counterChildren(counter);
    of({ a: "x" }).inc(4);
    counter.reset();
    of({ a: "x" }).inc();
    of({ a: "x" }).inc();
    expect(await series(metrics, "t_reset_total")).toEqual(['t_reset_total{a="x"} 2']);
    expect(() => of({ a: "x" }).inc(-1)).toThrow(/decrease/);
    expect(() => of({ a: "x" }).inc(Number.POSITIVE_INFINITY)).toThrow(/not a valid number/);
  });
});

describe("histogramChildren", () => {
  const BUCKETS = [1, 5, 10];
  /** Every line of a histogram's text, minus its help and type. */
  async function histogramLines(metrics: Metrics, name: string): Promise<string[]> {
    return (await metrics.text()).split("\n").filter((line) => line.startsWith(name));
  }

  it("observes as prom-client's own observe does: buckets, sum and count per label set", async () => {
    const prepared = new Metrics();
    const plain = new Metrics();
    const a = prepared.histogram({ name: "t_hist", help: "t", labelNames: ["a", "b"], buckets: BUCKETS });
    const b = plain.histogram({ name: "t_hist", help: "t", labelNames: ["a", "b"], buckets: BUCKETS });
    const of = histogramChildren(a);
    const values: Array<[string, number]> = [["x", 0.5], ["x", 1], ["y", 3], ["x", 7.5], ["x", 11], ["y", 10], ["x", 0]];
    for (const [label, value] of values) {
      of({ a: label, b: "1" }).observe(value);
      b.observe({ a: label, b: "1" }, value);
    }
    const lines = await histogramLines(prepared, "t_hist");
    expect(lines).toEqual(await histogramLines(plain, "t_hist"));
    expect(lines).toContain('t_hist_count{a="x",b="1"} 5');
    expect(lines).toContain('t_hist_bucket{le="5",a="x",b="1"} 3');
  });

  it("keeps observing after the histogram is reset, and refuses what prom-client refuses", async () => {
    const metrics = new Metrics();
    const histogram = metrics.histogram({ name: "t_hist_reset", help: "t", labelNames: ["a"], buckets: BUCKETS });
    const of = histogramChildren(histogram);
    of({ a: "x" }).observe(2);
    of({ a: "x" }).observe(2);
    histogram.reset();
    of({ a: "x" }).observe(4);
    of({ a: "x" }).observe(6);
    const lines = await histogramLines(metrics, "t_hist_reset");
    expect(lines).toContain('t_hist_reset_count{a="x"} 2');
    expect(lines).toContain('t_hist_reset_sum{a="x"} 10');
    expect(() => of({ a: "x" }).observe(Number.NaN)).toThrow(/not a valid number/);
  });
});
