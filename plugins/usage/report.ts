/**
 * `GET /-/usage/report` (spec 2.6, 4.8): cross-consumer totals of one service type per
 * UTC day, ISO week or month, every bucket of the range present (zero-filled), read in
 * one round trip. The query is validated first, each problem naming its parameter.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { bucketCount, bucketLabels, parseDay, PERIODS, type Period } from "./calendar.ts";
import { usageKeys } from "./keys.ts";
import { hashesRead } from "./ops.ts";
import { countsOf, totalsOf, typeKinds, type Counts, type Totals } from "./shape.ts";

/** Spec 8.5. */
export const MAX_BUCKETS = 400;

export interface ReportQuery {
  type: string;
  period: Period;
  from: string;
  to: string;
  fromMs: number;
  toMs: number;
  total: boolean;
}

export interface UsageReport {
  service_type: string;
  period: Period;
  from: string;
  to: string;
  buckets: Array<{ bucket: string } & Totals>;
  total?: Totals;
}

/** The validated query, or a 400 naming the parameter that is missing or malformed. */
export function parseReportQuery(query: (name: string) => string | undefined): ReportQuery {
  const required = (name: string, example: string): string => {
    const value = query(name)?.trim();
    if (value === undefined || value === "") throw errors.badRequest(`missing query parameter "${name}" (for example ${name}=${example})`);
    return value;
  };
  const type = required("type", "transcription");
  const period = required("period", "daily");
  if (!(PERIODS as readonly string[]).includes(period)) {
    throw errors.badRequest(`query parameter "period" must be one of ${PERIODS.join(", ")}; got "${period}"`);
  }
  const day = (name: "from" | "to") => {
    const text = required(name, "2026-01-31");
    const ms = parseDay(text);
    if (ms === undefined) throw errors.badRequest(`query parameter "${name}" must be a date YYYY-MM-DD; got "${text}"`);
    return { text, ms };
  };
  const from = day("from");
  const to = day("to");
  if (from.ms > to.ms) throw errors.badRequest(`query parameter "from" (${from.text}) is after "to" (${to.text})`);
  const count = bucketCount(period as Period, from.ms, to.ms);
  if (count > MAX_BUCKETS) {
    throw errors.badRequest(`the range ${from.text}..${to.text} spans ${count} ${period} buckets; at most ${MAX_BUCKETS} are allowed, narrow it or use a longer period`);
  }
  return { type, period: period as Period, from: from.text, to: to.text, fromMs: from.ms, toMs: to.ms, total: query("total") === "true" };
}

function add(sum: Counts, counts: Counts): void {
  for (const [counter, value] of Object.entries(counts) as Array<[keyof Counts, number]>) sum[counter] = (sum[counter] ?? 0) + value;
}

export async function usageReport(kv: KvStore, services: readonly ServiceConfig[], query: ReportQuery): Promise<UsageReport> {
  const labels = bucketLabels(query.period, query.fromMs, query.toMs);
  const hashes = await kv.run(hashesRead, labels.map((label) => usageKeys.bucket(query.period, query.type, label)), []);
  const { llm } = typeKinds(services)(query.type);
  const sum: Counts = {};
  const buckets = labels.map((bucket, i) => {
    const counts = countsOf(hashes[i] ?? []);
    add(sum, counts);
    // Tokens only where they were tracked (spec 2.6); jobs and seconds for async types.
    return { bucket, ...totalsOf(counts, llm, "tracked") };
  });
  const report: UsageReport = { service_type: query.type, period: query.period, from: query.from, to: query.to, buckets };
  if (query.total) report.total = totalsOf(sum, llm, "tracked");
  return report;
}
