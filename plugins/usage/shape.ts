/**
 * The wire shapes (docs/design.md#usage-record and docs/design.md#usage-report) from stored
 * counters. Which fields a service type shows follows what it is: tokens for LLM types (a service
 * of the type has `provider`), jobs and processing seconds for the others (async jobs); a type that
 * has data of the other kind anyway (its config changed) shows that too. `cost` shows where pricing
 * is on, or where a cost was recorded (pricing was on then).
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { LimitWindow } from "../../core/limits/windows.ts";
import { costOfNanos, roundCost } from "../../core/pricing/price.ts";
import { type Counter, COUNTERS, LAST_ACTIVE, outcomeOf, TYPE_SEPARATOR } from "./keys.ts";

/** Stored counters; `outcomes`: refused requests per outcome (`guardrail_blocked`), when any was counted. */
export type Counts = Partial<Record<Counter, number>> & { outcomes?: Record<string, number> };

export interface Totals {
  requests: number;
  jobs?: number;
  processing_time_seconds?: number;
  tokens?: { prompt: number; completion: number };
  /** In pricing.currency, rounded to 6 decimals: where pricing is on or a cost was recorded. */
  cost?: number;
  /** Refused requests per outcome (a refusal's error type, `guardrail_blocked`): only non-zero ones, omitted when none. */
  outcomes?: Record<string, number>;
}

export interface WindowView {
  requests?: number;
  tokens?: number;
  processing_time_seconds?: number;
  cost?: number;
  reset_at: string;
}

export interface TypeUsage {
  service_type: string;
  total: Totals;
  window?: WindowView;
}

export interface UsageRecordView {
  consumer: string;
  retention: string;
  last_active?: string;
  usage: TypeUsage[];
}

/** Seconds with at most millisecond precision, so float sums never show noise. */
export const roundSeconds = (seconds: number): number => Math.round(seconds * 1000) / 1000;

const COUNTER_SET = new Set<string>(COUNTERS);

/** Adds `value` of the counter named `counter` (a counter or `outcome.<outcome>`) to `counts`; false when it is neither. */
function addCounter(counts: Counts, counter: string, value: number): boolean {
  if (COUNTER_SET.has(counter)) {
    counts[counter as Counter] = (counts[counter as Counter] ?? 0) + value;
    return true;
  }
  const outcome = outcomeOf(counter);
  if (outcome === undefined) return false;
  const outcomes = (counts.outcomes ??= {});
  outcomes[outcome] = (outcomes[outcome] ?? 0) + value;
  return true;
}

/** [field, value, ...] as a map of counters (unknown fields ignored). */
export function countsOf(flat: readonly string[]): Counts {
  const counts: Counts = {};
  for (let i = 0; i + 1 < flat.length; i += 2) addCounter(counts, flat[i], Number(flat[i + 1]) || 0);
  return counts;
}

/** Adds every counter of `counts` to `sum` (a counter never added stays absent: "never tracked"). */
export function addCounts(sum: Counts, counts: Counts): void {
  for (const counter of COUNTERS) {
    const value = counts[counter];
    if (value !== undefined) sum[counter] = (sum[counter] ?? 0) + value;
  }
  if (!counts.outcomes) return;
  const outcomes = (sum.outcomes ??= {});
  for (const [outcome, value] of Object.entries(counts.outcomes)) outcomes[outcome] = (outcomes[outcome] ?? 0) + value;
}

/** A consumer hash: its last activity and the counts of each service type. */
export function parseConsumerHash(fields: Readonly<Record<string, string>>): { lastActive?: number; types: Map<string, Counts> } {
  const types = new Map<string, Counts>();
  let lastActive: number | undefined;
  for (const [field, value] of Object.entries(fields)) {
    if (field === LAST_ACTIVE) {
      lastActive = Number(value) || undefined;
      continue;
    }
    const at = field.lastIndexOf(TYPE_SEPARATOR);
    if (at < 0) continue;
    const type = field.slice(0, at);
    const counts = types.get(type) ?? {};
    if (addCounter(counts, field.slice(at + 1), Number(value) || 0)) types.set(type, counts);
  }
  return { lastActive, types };
}

/** What kind of service type this is, from the config. */
export function typeKinds(services: readonly ServiceConfig[]): (type: string) => { llm: boolean } {
  const llm = new Set(services.filter((s) => s.provider !== "").map((s) => s.type));
  return (type) => ({ llm: llm.has(type) });
}

const hasTokens = (counts: Counts) => counts.prompt_tokens !== undefined || counts.completion_tokens !== undefined;
const hasJobs = (counts: Counts) => counts.jobs !== undefined || counts.processing_seconds !== undefined;

/**
 * Totals as 2.4 `total` / 2.6 bucket fields. `tokens` follows `tokensWhen`: the record
 * shows them for every LLM type; a report bucket only when tokens were tracked in it.
 */
export function totalsOf(counts: Counts, llm: boolean, tokensWhen: "llm" | "tracked", priced = false): Totals {
  const totals: Totals = { requests: counts.requests ?? 0 };
  if (!llm || hasJobs(counts)) {
    totals.jobs = counts.jobs ?? 0;
    totals.processing_time_seconds = roundSeconds(counts.processing_seconds ?? 0);
  }
  if ((tokensWhen === "llm" && llm) || hasTokens(counts)) {
    totals.tokens = { prompt: counts.prompt_tokens ?? 0, completion: counts.completion_tokens ?? 0 };
  }
  if (priced || counts.cost_nanos !== undefined) totals.cost = costOfNanos(counts.cost_nanos ?? 0);
  const outcomes = nonZero(counts.outcomes);
  if (outcomes) totals.outcomes = outcomes;
  return totals;
}

/** The non-zero outcome counts, or undefined when there is none. */
export function nonZero(outcomes: Readonly<Record<string, number>> | undefined): Record<string, number> | undefined {
  if (!outcomes) return undefined;
  const shown = Object.entries(outcomes).filter(([, value]) => value !== 0);
  return shown.length === 0 ? undefined : Object.fromEntries(shown);
}

export const isEmpty = (counts: Counts): boolean => COUNTERS.every((counter) => !counts[counter]) && nonZero(counts.outcomes) === undefined;

export function windowView(window: LimitWindow): WindowView {
  return {
    ...(window.requests !== undefined ? { requests: window.requests } : {}),
    ...(window.tokens !== undefined ? { tokens: window.tokens } : {}),
    ...(window.processingSeconds !== undefined ? { processing_time_seconds: roundSeconds(window.processingSeconds) } : {}),
    ...(window.cost !== undefined ? { cost: roundCost(window.cost) } : {}),
    reset_at: new Date(window.resetAt).toISOString(),
  };
}
