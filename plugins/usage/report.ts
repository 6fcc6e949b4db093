/**
 * `GET /-/usage/report` (docs/design.md#usage-report): cross-consumer totals of one service type
 * per UTC day, ISO week or month, every bucket of the range present (zero-filled), read in
 * one round trip. The query is validated first, each problem naming its parameter.
 * `group_by=consumer|model|key|mode` adds the range's groups, read in the same round trip from the
 * group hashes of the same buckets, ranked by cost (docs/cost.md).
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { bucketCount, bucketLabels, parseDay, type Period, PERIODS } from "./calendar.ts";
import { costOfNanos } from "../../core/pricing/price.ts";
import { GROUP_DIMENSIONS, type GroupDimension, outcomeOf, TYPE_SEPARATOR, usageKeys } from "./keys.ts";
import { hashesRead } from "./ops.ts";
import { addCounts, type Counts, countsOf, nonZero, type Totals, totalsOf, typeKinds } from "./shape.ts";

/** docs/design.md#constants. */
export const MAX_BUCKETS = 400;

export interface ReportQuery {
  type: string;
  period: Period;
  from: string;
  to: string;
  fromMs: number;
  toMs: number;
  total: boolean;
  /** `group_by`: the groups of this dimension are added, ranked by cost. */
  groupBy?: GroupDimension;
}

export interface ReportGroup {
  key: string;
  requests: number;
  tokens: number;
  cost: number;
  /** Refused requests per outcome (`guardrail_blocked`): only non-zero ones, omitted when none. */
  outcomes?: Record<string, number>;
}

export interface UsageReport {
  service_type: string;
  period: Period;
  from: string;
  to: string;
  buckets: Array<{ bucket: string } & Totals>;
  total?: Totals;
  groups?: ReportGroup[];
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
    throw errors.badRequest(
      `the range ${from.text}..${to.text} spans ${count} ${period} buckets; at most ${MAX_BUCKETS} are allowed, narrow it or use a longer period`,
    );
  }
  const groupBy = query("group_by");
  if (groupBy !== undefined && groupBy !== "" && !(GROUP_DIMENSIONS as readonly string[]).includes(groupBy)) {
    throw errors.badRequest(`query parameter "group_by" must be one of ${GROUP_DIMENSIONS.join(", ")}; got "${groupBy}"`);
  }
  return {
    type,
    period: period as Period,
    from: from.text,
    to: to.text,
    fromMs: from.ms,
    toMs: to.ms,
    total: query("total") === "true",
    ...(groupBy ? { groupBy: groupBy as GroupDimension } : {}),
  };
}

/** The groups of one dimension summed over the range's group hashes, most cost first (then most requests, then by key). */
function groupsOf(hashes: readonly string[][], dimension: GroupDimension): ReportGroup[] {
  const byKey = new Map<string, { requests: number; tokens: number; nanos: number; outcomes?: Record<string, number> }>();
  const prefix = `${dimension}${TYPE_SEPARATOR}`;
  for (const flat of hashes) {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const field = flat[i];
      if (!field.startsWith(prefix)) continue;
      const at = field.lastIndexOf(TYPE_SEPARATOR);
      const key = decodeURIComponent(field.slice(prefix.length, at));
      const counter = field.slice(at + 1);
      const sum = byKey.get(key) ?? { requests: 0, tokens: 0, nanos: 0 };
      const value = Number(flat[i + 1]) || 0;
      if (counter === "requests") sum.requests += value;
      else if (counter === "tokens") sum.tokens += value;
      else if (counter === "cost_nanos") sum.nanos += value;
      else {
        const outcome = outcomeOf(counter);
        if (outcome !== undefined) {
          const outcomes = (sum.outcomes ??= {});
          outcomes[outcome] = (outcomes[outcome] ?? 0) + value;
        }
      }
      byKey.set(key, sum);
    }
  }
  return [...byKey]
    .sort(([ka, a], [kb, b]) => b.nanos - a.nanos || b.requests - a.requests || (ka < kb ? -1 : ka > kb ? 1 : 0))
    .map(([key, sum]) => {
      const group: ReportGroup = { key, requests: sum.requests, tokens: sum.tokens, cost: costOfNanos(sum.nanos) };
      const outcomes = nonZero(sum.outcomes);
      if (outcomes) group.outcomes = outcomes;
      return group;
    });
}

export async function usageReport(kv: KvStore, services: readonly ServiceConfig[], query: ReportQuery, priced = false): Promise<UsageReport> {
  const labels = bucketLabels(query.period, query.fromMs, query.toMs);
  const keys = labels.map((label) => usageKeys.bucket(query.period, query.type, label));
  if (query.groupBy) keys.push(...labels.map((label) => usageKeys.groups(query.period, query.type, label)));
  const read = await kv.run(hashesRead, keys, []);
  const hashes = read.slice(0, labels.length);
  const { llm } = typeKinds(services)(query.type);
  const sum: Counts = {};
  const buckets = labels.map((bucket, i) => {
    const counts = countsOf(hashes[i] ?? []);
    addCounts(sum, counts);
    // Tokens only where they were tracked (docs/design.md#usage-report); jobs and seconds for async
    // types.
    return { bucket, ...totalsOf(counts, llm, "tracked", priced) };
  });
  const report: UsageReport = { service_type: query.type, period: query.period, from: query.from, to: query.to, buckets };
  if (query.total) report.total = totalsOf(sum, llm, "tracked", priced);
  if (query.groupBy) report.groups = groupsOf(read.slice(labels.length), query.groupBy);
  return report;
}
