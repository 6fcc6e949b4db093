/** What a load generator sends and how it judges each answer. */

export interface RequestSpec {
  /** Full URL of the target (direct backend, gateway or bare proxy). */
  url: string;
  method: "POST" | "GET";
  headers: Readonly<Record<string, string>>;
  body: Buffer;
  /**
   * When set, every request replaces this marker in the body with a unique token (so each
   * request is a cache miss). It must occur once in `body`.
   */
  uniqueMarker?: string;
  /** When set, `X-Consumer: consumer-<n>` rotates over this many consumers (drawn at random with `randomConsumers`). */
  consumers?: number;
  /** Each request's consumer drawn at random below `consumers` instead of rotated (the growth scenarios). */
  randomConsumers?: boolean;
  /**
   * When set, each request replaces `marker` in the body with a model drawn at random: `base`
   * for 0, else `base-<n>`, n below `count` (the growth scenarios' many models).
   */
  models?: { marker: string; base: string; count: number };
  expect: {
    status: number;
    /** The exact body every answer must have. */
    body?: string;
    /** Else: a text every answer body must contain. */
    contains?: string;
  };
}

/** One closed-loop run (fixed connections, as fast as answers come). */
export interface ClosedLoopResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Transport errors, timeouts and unexpected statuses. */
  errors: number;
  /** Answers with the expected status but a wrong body. */
  invalid: number;
}

/** One open-loop run (fixed request rate). */
export interface OpenLoopResult extends ClosedLoopResult {
  /** Time to the first body byte (the first SSE event for streams). */
  ttfbP50Ms: number;
  ttfbP99Ms: number;
  /** Requests that were sent later than scheduled by more than 5 ms (a client that fell behind). */
  late: number;
  /** Every valid request's latency and time to first byte, ascending (rounds are merged from these). */
  totalsMs: number[];
  ttfbsMs: number[];
}

export const CONSUMER_HEADER = "X-Consumer";

/** The consumer of the `n`-th request: rotated, or drawn at random with `randomConsumers`. */
export function consumerOf(spec: RequestSpec, n: number): string | undefined {
  if (!spec.consumers) return undefined;
  return `consumer-${spec.randomConsumers ? Math.floor(Math.random() * spec.consumers) : n % spec.consumers}`;
}

/** The n-th model name of `models` (bench/config.ts configures the same names). */
export function modelName(base: string, n: number): string {
  return n === 0 ? base : `${base}-${n}`;
}

/** `text` with the model marker replaced by a model drawn at random (unchanged without `models`). */
export function withRandomModel(spec: RequestSpec, text: string): string {
  const models = spec.models;
  return models ? text.replace(models.marker, modelName(models.base, Math.floor(Math.random() * models.count))) : text;
}

export function isValid(spec: RequestSpec, status: number, body: string): "ok" | "error" | "invalid" {
  if (status !== spec.expect.status) return "error";
  if (spec.expect.body !== undefined) return body === spec.expect.body ? "ok" : "invalid";
  if (spec.expect.contains !== undefined) return body.includes(spec.expect.contains) ? "ok" : "invalid";
  return "ok";
}

/** The p-th percentile (0-100) of ascending `sorted` values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}
