/**
 * The guards of `npm run bench`: each scenario's figures at 32 connections judged against
 * those of a chosen earlier run (bench/guards.json), with a margin, so a regression shows as a
 * failed guard. The CPU per request is judged as a multiple of a reference process measured in
 * the same run (the framework floor, else the bare proxy): the machine's speed drifts between
 * runs (bench/README.md), a ratio within one run much less. Peak RSS is judged as it is.
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { RowResult } from "./matrix.ts";
import type { Figures, TargetName } from "./measure.ts";
import type { Results } from "./report.ts";

export interface Guard {
  /** The gateway's CPU per request over the reference's, in the run it was taken from. */
  cpuXref: number;
  /** Which process the ratio is over ("floor" or "bare"), and of which config and scenario. */
  ref: string;
  peakRssMb: number;
  /** The results file (or measurement) it was taken from. */
  source: string;
}

export interface GuardFile {
  /** A figure may exceed its guard by this factor before the guard fails. */
  margin: { cpu: number; rss: number };
  /** Per runtime, per `variant/scenario` (32 connections). */
  node: Record<string, Guard>;
  deno: Record<string, Guard>;
}

export interface GuardCheck {
  row: string;
  measure: "CPU x reference" | "peak RSS MB";
  guard: string;
  measured: string;
  /** "n/a" when the row has no guard or no reference in this run. */
  met: boolean | "n/a";
}

/** Scenarios without a floor of their own compare with the floor of the one they extend. */
const BASE_SCENARIO: Record<string, string> = {
  "guard-input-2k": "llm-miss",
  "guard-input-2k-typical": "llm-miss",
  "guard-stream-out": "stream",
  "stream-miss": "stream",
  growth: "llm-miss",
};

const rowKey = (row: RowResult) => `${row.variant}/${row.scenario}`;

function findFigure(rows: RowResult[], scenario: string, name: TargetName, variant: string): { figures: Figures; where: string } | undefined {
  const same = rows.filter((r) => r.scenario === scenario && r.load === "c32" && r.figures[name]);
  const row = same.find((r) => r.variant === variant) ?? same.find((r) => r.variant === "basic") ?? same[0];
  const figures = row?.figures[name];
  return row && figures ? { figures, where: `${name} ${row.variant}/${row.scenario}` } : undefined;
}

/**
 * The reference of a row: the framework floor of its scenario (its own, the basic config's or
 * any config's of this run), of the scenario it extends, else the bare proxy of its scenario.
 */
export function referenceOf(rows: RowResult[], row: RowResult): { figures: Figures; where: string } | undefined {
  const base = BASE_SCENARIO[row.scenario];
  return findFigure(rows, row.scenario, "floor", row.variant) ??
    (base ? findFigure(rows, base, "floor", row.variant) : undefined) ??
    findFigure(rows, row.scenario, "bare", row.variant);
}

export function readGuards(path: string): GuardFile {
  return JSON.parse(readFileSync(path, "utf8")) as GuardFile;
}

/** Every 32-connection gateway row of `results`, judged against its guard. */
export function checkGuards(results: Results, file: GuardFile): GuardCheck[] {
  const guards = file[results.runtime];
  const checks: GuardCheck[] = [];
  for (const row of results.rows.filter((r) => r.load === "c32" && r.figures.gateway)) {
    const gateway = row.figures.gateway as Figures;
    const guard = guards[rowKey(row)];
    const name = rowKey(row);
    if (!guard) {
      checks.push({
        row: name,
        measure: "CPU x reference",
        guard: "none yet (--set-guards)",
        measured: `${gateway.cpuUsPerRequest.toFixed(0)} µs`,
        met: "n/a",
      });
      continue;
    }
    const ref = referenceOf(results.rows, row);
    const limit = guard.cpuXref * file.margin.cpu;
    if (ref) {
      const r = gateway.cpuUsPerRequest / ref.figures.cpuUsPerRequest;
      checks.push({
        row: name,
        measure: "CPU x reference",
        guard: `<= ${limit.toFixed(2)}x (${guard.cpuXref.toFixed(2)}x ${guard.ref} in ${guard.source}, +${((file.margin.cpu - 1) * 100).toFixed(0)} %)`,
        measured: `${r.toFixed(2)}x (${gateway.cpuUsPerRequest.toFixed(0)} / ${ref.figures.cpuUsPerRequest.toFixed(0)} µs, ${ref.where})`,
        met: r <= limit,
      });
    } else {
      checks.push({ row: name, measure: "CPU x reference", guard: `<= ${limit.toFixed(2)}x ${guard.ref}`, measured: "no reference in this run", met: "n/a" });
    }
    const rss = guard.peakRssMb * file.margin.rss;
    checks.push({
      row: name,
      measure: "peak RSS MB",
      guard: `<= ${rss.toFixed(0)} (${guard.peakRssMb.toFixed(0)} in ${guard.source}, +${((file.margin.rss - 1) * 100).toFixed(0)} %)`,
      measured: gateway.peakRssMb.toFixed(0),
      met: gateway.peakRssMb <= rss,
    });
  }
  return checks;
}

/** `results`' figures as the guards of its runtime (rows it lacks keep their guards); written to `path`. */
export function setGuards(results: Results, file: GuardFile, source: string, path: string): number {
  let count = 0;
  for (const row of results.rows.filter((r) => r.load === "c32" && r.figures.gateway)) {
    const gateway = row.figures.gateway as Figures;
    const ref = referenceOf(results.rows, row);
    if (!ref) continue;
    file[results.runtime][rowKey(row)] = {
      cpuXref: Number((gateway.cpuUsPerRequest / ref.figures.cpuUsPerRequest).toFixed(3)),
      ref: ref.where,
      peakRssMb: Math.round(gateway.peakRssMb),
      source,
    };
    count++;
  }
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
  return count;
}

export function guardsTable(checks: GuardCheck[]): string {
  const lines = [
    "| row (config/scenario, 32 connections) | measure | guard | measured | met |",
    "|---|---|---|---|---|",
    ...checks.map((c) => `| ${c.row} | ${c.measure} | ${c.guard} | ${c.measured} | ${c.met === "n/a" ? "n/a" : c.met ? "yes" : "**FAILED**"} |`),
  ];
  return lines.join("\n");
}
