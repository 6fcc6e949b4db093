import { describe, expect, it } from "vitest";
import { counterChildren } from "../../core/metric-labels.ts";
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
