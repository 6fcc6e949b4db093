/**
 * The figures of a reliability scenario (test/reliability/), for docs/reliability.md's results table:
 * each scenario calls `reportReliability` once at its end. The figures are printed as one
 * `reliability:` line and appended as one JSON line to $RELIABILITY_REPORT (default
 * `<tmpdir>/gateway-reliability.jsonl`); test/support/reliability-table.ts turns that file
 * into the markdown table.
 */
import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onDeno } from "./gateway-process.ts";

/** The Redis a scenario runs on (test/support/scenario-redis.ts), and its name in the table. */
export type RedisTopology = "redis" | "sentinel" | "cluster";
export const TOPOLOGY_NAMES: Record<RedisTopology, string> = { redis: "one Redis", sentinel: "Sentinel", cluster: "Cluster" };

export interface ReliabilityFigures {
  /** The scenario's number in the list (1-7); the table is sorted by it. */
  id: number;
  scenario: string;
  /** The Redis it ran on when a scenario runs on each topology (scenario-redis.ts); one line per topology in the table. */
  redis?: RedisTopology;
  /** What was sent, in words ("300 jobs, 3 relays x 4 slots"). */
  load: string;
  /** What was broken, in words ("SIGKILL 2 of 3 relays mid-job"). */
  faults: string;
  /** Requests the scenario sent (or webhook attempts it received, as it says in `load`). */
  requests: number;
  /** Accepted work that never completed, or never reached its receiver. */
  lost: number;
  /** Work done or delivered twice where the spec says once. */
  duplicated: number;
  /** Answers a client would take for a failure that the spec does not call for. */
  errors: number;
  /** Error answers the spec prescribes during the fault (a 503 while Redis is down), and why. */
  expectedErrors?: { count: number; why: string };
  /** Anything else worth a look in the raw line. */
  details?: Record<string, string | number | boolean>;
}

export interface ReliabilityLine extends ReliabilityFigures {
  runtime: "node" | "deno";
  at: string;
}

export function reliabilityReportPath(): string {
  return process.env.RELIABILITY_REPORT || join(tmpdir(), "gateway-reliability.jsonl");
}

export function reportReliability(figures: ReliabilityFigures): void {
  const line: ReliabilityLine = { ...figures, runtime: onDeno ? "deno" : "node", at: new Date().toISOString() };
  const pairs = Object.entries({ ...figures, expectedErrors: figures.expectedErrors?.count ?? 0, details: undefined, ...figures.details })
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === "string" && /\s/.test(value) ? JSON.stringify(value) : String(value)}`);
  console.log(`reliability: ${pairs.join(" ")}`);
  appendFileSync(reliabilityReportPath(), `${JSON.stringify(line)}\n`);
}
