/**
 * The `relay:` section (the async job worker) and `services[i].retry`, the retries of a
 * failed job attempt, which the relay carries out.
 */
import { type Static, Type } from "@sinclair/typebox";
import { listenAddressProblem, parseListenAddress } from "../../core/config/addr.ts";
import { durationMs, formatDuration } from "../../core/config/duration.ts";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection, ServiceFieldSet } from "../../core/config/schema.ts";

export const RelaySchema = Section(
  {
    embedded: Type.Optional(
      Type.Boolean({ description: "Run the relay inside the gateway; unset = true with the embedded key-value store, false with Redis" }),
    ),
    concurrency: Type.Integer({ minimum: 1, default: 4, description: "Jobs processed in parallel per process" }),
    lease_seconds: Type.Integer({ minimum: 1, default: 60, description: "Lease of a job being processed, in seconds; renewed while the backend works" }),
    request_timeout: Duration("10m", "Max time for one inference call"),
    metrics_addr: Type.String({
      default: "",
      description:
        'Where a standalone relay process (npm run relay) serves GET /metrics and GET /health, host:port or :port; "" = no listener. RELAY_METRICS_ADDR overrides it; not hot-reloadable',
    }),
  },
  "Relay worker",
  "See [Scraping standalone relays](async-jobs.md#scraping-standalone-relays) for `metrics_addr`.",
);

/**
 * Retries of a failed async job attempt (a transient failure: network error, timeout, or a
 * status listed in on_statuses). max_attempts 1 is the spec's behaviour: no retry.
 */
export const RetrySchema = Type.Object(
  {
    max_attempts: Type.Integer({ minimum: 1, default: 1, description: "Attempts in total, the first included; 1 = no retry (the spec's behaviour)" }),
    backoff: Duration("1s", "Delay before the first retry, doubled on each further one; must be positive"),
    max_backoff: Duration("30s", "Cap on the delay, a backend's Retry-After included; positive, not below backoff"),
    on_statuses: Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
      default: [429, 500, 502, 503, 504],
      description: "Backend statuses (100-599) that are retried; network errors and relay.request_timeout always are",
    }),
  },
  { additionalProperties: false, default: {}, description: "Retries of a failed async job attempt" },
);

export const RelayServiceFields = Type.Object(
  { retry: RetrySchema },
  { notes: "`retry` applies to async jobs only; see [Retries](async-jobs.md#retries-servicesretry)." },
);

export type RelayConfig = Static<typeof RelaySchema>;
export type RetryConfig = Static<typeof RetrySchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    relay: RelayConfig;
  }
  interface ServiceFields extends Static<typeof RelayServiceFields> {}
}

export const relaySection: ConfigSection<typeof RelaySchema> = {
  key: "relay",
  schema: RelaySchema,
  validate: ({ metrics_addr: addr }) =>
    typeof addr === "string" && addr !== "" && parseListenAddress(addr) === undefined ? [listenAddressProblem("relay.metrics_addr", addr)] : [],
  // The standalone relay's listener is opened once, like the gateway's.
  restartOnly: ["metrics_addr"],
};

/** A service's retry delays: a 0s delay would retry at once, in a tight loop against a failing backend. */
function retryProblems(retry: RetryConfig | undefined, at: string): string[] {
  if (!retry) return [];
  let backoff: number;
  let maxBackoff: number;
  try {
    backoff = durationMs(retry.backoff);
    maxBackoff = durationMs(retry.max_backoff);
  } catch {
    return []; // a malformed duration is already reported by the schema
  }
  const problems: string[] = [];
  if (backoff <= 0) {
    problems.push(`${at}.backoff: must be a positive duration, got ${JSON.stringify(retry.backoff)} (default "1s": the delay before the first retry)`);
  }
  if (maxBackoff <= 0) {
    problems.push(
      `${at}.max_backoff: must be a positive duration, got ${JSON.stringify(retry.max_backoff)} (default "30s": the longest delay between attempts)`,
    );
  } else if (backoff > maxBackoff) {
    problems.push(`${at}.max_backoff: ${formatDuration(maxBackoff)} is shorter than backoff (${formatDuration(backoff)}); raise max_backoff or lower backoff`);
  }
  return problems;
}

export const relayServiceFields: ServiceFieldSet<typeof RelayServiceFields> = {
  schema: RelayServiceFields,
  validate: (service, at) => retryProblems(service.retry, `${at}.retry`),
};
