/**
 * The tables of the scenarios that vary one setting: the growth scenarios (models and
 * consumers), `server.workers` 1 and 2, and `usage.write: after_answer` against prod-redis.
 */
import { GROWTH, growthId } from "./growth.ts";
import type { RowResult } from "./matrix.ts";
import type { Figures } from "./measure.ts";
import type { Results, TargetCheck } from "./report.ts";

const fmt = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? "-" : value.toFixed(digits));
const times = (value: number | undefined, base: number | undefined) =>
  value === undefined || base === undefined || !base || Number.isNaN(value) ? "-" : `${(value / base).toFixed(2)}x`;

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((row) => `| ${row.join(" | ")} |`)].join("\n");
}

function gatewayOf(results: Results, variant: string, scenario: string, load = "c32"): Figures | undefined {
  return results.rows.find((r) => r.variant === variant && r.scenario === scenario && r.load === load)?.figures.gateway;
}

/** The growth rows in the order of GROWTH, those this run has. */
function growthRows(results: Results): Array<{ models: number; consumers: number; figures: Figures }> {
  return GROWTH.flatMap((g) => {
    const figures = gatewayOf(results, growthId(g), "growth");
    return figures ? [{ ...g, figures }] : [];
  });
}

/**
 * Models, consumers, CPU per request against the first row, and the memory over the first
 * row per consumer the run reached (n random draws over k consumers reach k(1 - e^(-n/k)) of them).
 */
export function growthTable(results: Results): string {
  const rows = growthRows(results);
  if (rows.length === 0) return "";
  const first = rows[0].figures;
  return table(
    [
      "models in config",
      "distinct consumers",
      "CPU µs/req",
      "x first row",
      "req/s",
      "p99 ms",
      "peak RSS MB",
      "consumers reached",
      "RSS over first row per consumer",
    ],
    rows.map(({ models, consumers, figures }) => {
      const reached = consumers * (1 - Math.exp(-figures.requests / consumers));
      const perConsumer = consumers > 1 ? `${fmt(((figures.peakRssMb - first.peakRssMb) * 1024 * 1024) / reached)} B` : "-";
      return [
        String(models),
        String(consumers),
        fmt(figures.cpuUsPerRequest),
        times(figures.cpuUsPerRequest, first.cpuUsPerRequest),
        fmt(figures.rps),
        fmt(figures.p99Ms, 1),
        fmt(figures.peakRssMb),
        fmt(reached),
        perConsumer,
      ];
    }),
  );
}

/** Requests/s and CPU per request with 1 and 2 workers; the workers' own CPU per request apart from the primary's. */
export function workersTable(results: Results): string {
  const rows = [1, 2].flatMap((workers) => {
    const figures = gatewayOf(results, `workers-${workers}`, "llm-miss");
    return figures ? [{ workers, figures }] : [];
  });
  if (rows.length === 0) return "";
  const one = rows.find((r) => r.workers === 1)?.figures;
  return table(
    [
      "workers",
      "req/s",
      "x 1 worker",
      "CPU µs/req, all processes",
      "CPU µs/req in the workers",
      "x 1 worker",
      "CPU µs/req primary",
      "p99 ms",
      "peak RSS MB (sum)",
    ],
    rows.map(({ workers, figures }) => [
      String(workers),
      fmt(figures.rps),
      times(figures.rps, one?.rps),
      fmt(figures.cpuUsPerRequest),
      fmt(figures.childCpuUsPerRequest),
      times(figures.childCpuUsPerRequest, one?.childCpuUsPerRequest),
      fmt(figures.cpuUsPerRequest - (figures.childCpuUsPerRequest ?? Number.NaN)),
      fmt(figures.p99Ms, 1),
      fmt(figures.peakRssMb),
    ]),
  );
}

const AFTER = "prod-redis-after-answer";

/** `usage.write: after_answer` against the default on Redis, same scenarios and loads. */
export function usageWriteTable(results: Results): string {
  const lines: string[][] = [];
  for (const scenario of ["llm-miss", "stream"]) {
    for (const load of ["c32", "r100"] as const) {
      const before = gatewayOf(results, "prod-redis", scenario, load);
      const after = gatewayOf(results, AFTER, scenario, load);
      if (!before || !after) continue;
      lines.push([
        scenario,
        load === "c32" ? "32 connections" : "100 req/s",
        `${fmt(before.rps)} / ${fmt(after.rps)} (${times(after.rps, before.rps)})`,
        `${fmt(before.cpuUsPerRequest)} / ${fmt(after.cpuUsPerRequest)} (${times(after.cpuUsPerRequest, before.cpuUsPerRequest)})`,
        `${fmt(before.p50Ms, 2)} / ${fmt(after.p50Ms, 2)}`,
        `${fmt(before.p99Ms, 2)} / ${fmt(after.p99Ms, 2)}`,
      ]);
    }
  }
  if (lines.length === 0) return "";
  return table(["scenario", "load", "req/s before / after", "CPU µs/req before / after", "p50 ms before / after", "p99 ms before / after"], lines);
}

/** The growth target (last row within 1.2x of the first) and the workers' (their CPU per request does not grow with 2). */
export function scalingTargets(results: Results): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const rows = growthRows(results);
  if (rows.length >= 2) {
    const [first, last] = [rows[0], rows[rows.length - 1]];
    const r = last.figures.cpuUsPerRequest / first.figures.cpuUsPerRequest;
    checks.push({
      target: `growth: CPU/request with ${last.models} models and ${last.consumers} consumers vs ${first.models} and ${first.consumers}`,
      limit: "<= 1.2x",
      value: `${fmt(last.figures.cpuUsPerRequest)} / ${fmt(first.figures.cpuUsPerRequest)} µs = ${r.toFixed(2)}x`,
      met: r <= 1.2,
    });
  }
  const [one, two] = [gatewayOf(results, "workers-1", "llm-miss"), gatewayOf(results, "workers-2", "llm-miss")];
  if (one?.childCpuUsPerRequest && two?.childCpuUsPerRequest) {
    const r = two.childCpuUsPerRequest / one.childCpuUsPerRequest;
    checks.push({
      target: "workers: CPU/request in the workers, 2 workers vs 1 (prod-redis LLM miss)",
      limit: "<= 1.2x",
      value: `${fmt(two.childCpuUsPerRequest)} / ${fmt(one.childCpuUsPerRequest)} µs = ${r.toFixed(2)}x (req/s ${fmt(two.rps)} vs ${fmt(one.rps)})`,
      met: r <= 1.2,
    });
  }
  return checks;
}

/** Rows this module's tables show, which the general tables leave to them. */
export const isScalingRow = (row: RowResult) => row.variant.startsWith("growth-") || row.variant.startsWith("workers-");
