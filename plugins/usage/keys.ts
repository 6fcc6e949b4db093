/**
 * Every key the usage plugin keeps in the KV store (docs/design.md#usage, `usage` in
 * docs/design.md#usage-retention). Consumer and service type segments are URI-encoded so no name
 * can make two keys collide.
 *
 * | key                                  | type | holds                                                         | TTL
 * |--------------------------------------|------|---------------------------------------------------------------|-----------------------------------------
 * | usage:consumer:<consumer>            | hash | `last_active` (ms) and, per service type `<type>`, the fields  | `usage.retention`, set when the key is
 * |                                      |      | `<type>|requests`, `<type>|jobs`, `<type>|processing_seconds`, | created (an existing key keeps its own;
 * |                                      |      | `<type>|prompt_tokens`, `<type>|completion_tokens`,            | none = all-time)
 * |                                      |      | `<type>|cost_nanos` (cost in 1e-9 of pricing.currency),        |
 * |                                      |      | `<type>|outcome.<outcome>` (refused requests per outcome,      |
 * |                                      |      | URI-encoded: `outcome.guardrail_blocked`)                      |
 * | usage:consumers                      | zset | consumer -> last activity (ms): the known consumers            | none
 * | usage:rank:<type>                    | zset | consumer -> requests of that type (`GET /-/usage?type=`)       | none
 * | usage:daily:<type>:<YYYYMMDD>        | hash | requests, jobs, processing_seconds, prompt_tokens,             | 400 days from the bucket's first write
 * |                                      |      | completion_tokens, cost_nanos, outcome.<outcome> summed across |
 * |                                      |      | consumers (UTC day)                                            |
 * | usage:weekly:<type>:<YYYY-Www>       | hash | the same per ISO week (weeks start on Monday)                  | 800 days from the bucket's first write
 * | usage:monthly:<type>:<YYYYMM>        | hash | the same per calendar month                                    | none (kept)
 * | usage:groups:<period>:<type>:<label> | hash | per bucket as above, the report's `group_by` groups: field     | as the bucket of that period
 * |                                      |      | `<dimension>|<key>|<counter>` (dimension consumer, model, key  |
 * |                                      |      | or mode (`interactive`, `batch`); key URI-encoded; counter     |
 * |                                      |      | requests, tokens, cost_nanos or outcome.<outcome>)             |
 *
 * A counter field exists only once something was added to it, which is how a report
 * tells "no tokens tracked in this bucket" from zero. When a consumer's hash expired
 * (retention) and comes back, the first request of a type resets that consumer's rank
 * score instead of adding to the old one.
 */
import type { Period } from "./calendar.ts";

const segment = encodeURIComponent;

/** Counter names, in the bucket hashes and (after `<type>|`) in the consumer hash. */
export const COUNTERS = ["requests", "jobs", "processing_seconds", "prompt_tokens", "completion_tokens", "cost_nanos"] as const;
export type Counter = (typeof COUNTERS)[number];

/** What `GET /-/usage/report?group_by=` groups by. */
export const GROUP_DIMENSIONS = ["consumer", "model", "key", "mode"] as const;
export type GroupDimension = (typeof GROUP_DIMENSIONS)[number];
export type GroupCounter = "requests" | "tokens" | "cost_nanos";

/**
 * The counter of the requests that ended with one outcome (`RequestContext.outcome`, a refusal's
 * error type): `outcome.<outcome>`, URI-encoded so it holds no "|".
 */
export type OutcomeCounter = `outcome.${string}`;
const OUTCOME_PREFIX = "outcome.";
export const outcomeCounter = (outcome: string): OutcomeCounter => `outcome.${segment(outcome)}`;
/** The outcome a counter name counts, or undefined when it is not an outcome counter (or not one this file wrote). */
export function outcomeOf(counter: string): string | undefined {
  if (!counter.startsWith(OUTCOME_PREFIX)) return undefined;
  try {
    return decodeURIComponent(counter.slice(OUTCOME_PREFIX.length));
  } catch {
    return undefined;
  }
}

export const LAST_ACTIVE = "last_active";

/** Separates the service type from the counter in a consumer hash field (counter names hold no "|"). */
export const TYPE_SEPARATOR = "|";

export const usageKeys = {
  consumer: (consumer: string) => `usage:consumer:${segment(consumer)}`,
  consumers: "usage:consumers",
  rank: (type: string) => `usage:rank:${segment(type)}`,
  bucket: (period: Period, type: string, label: string) => `usage:${period}:${segment(type)}:${label}`,
  groups: (period: Period, type: string, label: string) => `usage:groups:${period}:${segment(type)}:${label}`,
  /** A field of a groups hash. */
  groupField: (dimension: GroupDimension, key: string, counter: GroupCounter | OutcomeCounter) =>
    `${dimension}${TYPE_SEPARATOR}${segment(key)}${TYPE_SEPARATOR}${counter}`,
  /** What every consumer-hash field of a service type starts with. */
  fieldPrefix: (type: string) => `${type}${TYPE_SEPARATOR}`,
  /** The consumer-hash field of one counter of one service type. */
  field: (type: string, counter: Counter) => `${type}${TYPE_SEPARATOR}${counter}`,
};
