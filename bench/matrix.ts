/**
 * The sync rows: one scenario at one load against several targets, in interleaved rounds
 * (round r starts with a different target) so drift in the machine's speed hits each
 * target alike rather than whichever ran last.
 */
import type { RequestSpec } from "./load/spec.ts";
import { closedFigures, closedRound, type Figures, type LoadGenerator, openFigures, openRound, type Round, type Target, type TargetName } from "./measure.ts";
import type { OpenLoopResult } from "./load/spec.ts";
import { MODEL, type Scenario } from "./scenarios.ts";
import { MODELS } from "./config.ts";

export type LoadId = "c32" | "r100";

export interface Timing {
  warmupSeconds: number;
  closedRounds: number;
  closedSeconds: number;
  openRounds: number;
  openSeconds: number;
  connections: number;
  rate: number;
}

export interface RowResult {
  variant: string;
  scenario: Scenario["id"];
  title: string;
  load: LoadId;
  figures: Partial<Record<TargetName, Figures>>;
}

export interface RowContext {
  variant: string;
  timing: Timing;
  generator: LoadGenerator;
  repoRoot: string;
  /** Who sends and for which model (production and growth variants). */
  population?: Population;
  log(line: string): void;
}

/** The consumers and models requests are spread over. */
export interface Population {
  /** `X-Consumer` over this many consumers: rotated, or drawn at random with `random`. */
  consumers: number;
  random?: boolean;
  /** Models the growth scenario draws from at random (default 1). */
  models?: number;
}

function rotated<T>(items: readonly T[], by: number): T[] {
  const shift = by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

export function specFor(scenario: Scenario, target: Target, population?: Population): RequestSpec {
  let spec = scenario.request(target.base, target.name);
  if (spec.body.includes(MODEL)) spec = { ...spec, models: { marker: MODEL, base: MODELS.chat, count: population?.models ?? 1 } };
  return population
    ? { ...spec, consumers: population.consumers, randomConsumers: population.random, headers: { ...spec.headers, "X-User-Type": "standard" } }
    : spec;
}

/** The loads of one scenario: closed loop (throughput) then open loop (added latency). */
export async function runScenario(
  context: RowContext,
  scenario: Scenario,
  targets: readonly Target[],
  loads: readonly LoadId[] = ["c32", "r100"],
): Promise<RowResult[]> {
  const { timing, generator, repoRoot } = context;
  // Warm-up: JIT, connection pools, and for the cache-hit scenario the cache entry itself.
  for (const target of targets) {
    await closedRound(target, specFor(scenario, target, context.population), timing.connections, timing.warmupSeconds, generator, repoRoot);
  }

  const closed = new Map<TargetName, Round[]>();
  for (let round = 0; round < timing.closedRounds; round++) {
    for (const target of rotated(targets, round)) {
      const result = await closedRound(target, specFor(scenario, target, context.population), timing.connections, timing.closedSeconds, generator, repoRoot);
      closed.set(target.name, [...(closed.get(target.name) ?? []), result]);
    }
  }
  const open = new Map<TargetName, Round<OpenLoopResult>[]>();
  for (let round = 0; loads.includes("r100") && round < timing.openRounds; round++) {
    for (const target of rotated(targets, round)) {
      const result = await openRound(target, specFor(scenario, target, context.population), timing.rate, timing.openSeconds);
      open.set(target.name, [...(open.get(target.name) ?? []), result]);
    }
  }

  const rows: RowResult[] = loads.map((load) => ({ variant: context.variant, scenario: scenario.id, title: scenario.title, load, figures: {} }));
  for (const row of rows) {
    for (const target of targets) {
      row.figures[target.name] = row.load === "c32" ? closedFigures(closed.get(target.name) ?? []) : openFigures(open.get(target.name) ?? []);
    }
  }
  for (const row of rows) context.log(summaryLine(row));
  return rows;
}

function summaryLine(row: RowResult): string {
  const parts = Object.entries(row.figures).map(([name, f]) => {
    const ttfb = f.ttfbP50Ms !== undefined && row.load === "r100" ? ` ttfb50=${f.ttfbP50Ms.toFixed(2)}` : "";
    const foreign = f.foreignLoad > 0.05 ? ` (core shared: ${(f.foreignLoad * 100).toFixed(0)}% other)` : "";
    return `${name}: ${f.rps.toFixed(0)}/s p50=${f.p50Ms.toFixed(2)} p99=${f.p99Ms.toFixed(2)}${ttfb} cpu=${f.cpuUsPerRequest.toFixed(0)}us rss=${
      f.peakRssMb.toFixed(0)
    }MB err=${f.errors} bad=${f.invalid}${foreign}`;
  });
  return `  ${row.variant} ${row.scenario} ${row.load}: ${parts.join(" | ")}`;
}
