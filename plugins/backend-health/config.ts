/**
 * The `backend_health:` section: which backend answers fail over to the next backend, and how
 * long a failing backend sits out (Envoy's outlier detection is the model).
 */
import { type Static, Type } from "@sinclair/typebox";
import { durationMs, formatDuration } from "../../core/config/duration.ts";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const BackendHealthSchema = Section(
  {
    failover_statuses: Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
      default: [429, 500, 502, 503, 504],
      description: "Backend statuses that fail over to the next backend (network errors always do): 429 or 500-599; [500, 502, 503, 504] is the spec's rule",
    }),
    retry_after_max: Duration("60s", "Cap on a backend's Retry-After sit-out"),
    consecutive_failures: Type.Integer({ minimum: 0, default: 3, description: "Failures in a row that eject a backend; 0 = never eject" }),
    ejection_time: Duration("30s", "First ejection; multiplied by the ejections in a row"),
    max_ejection_time: Duration("5m", "Cap on an ejection"),
    max_ejected_percent: Type.Integer({ minimum: 0, maximum: 100, default: 50, description: "Most of a service's backends ejected at once, in percent" }),
    retry_rounds: Type.Integer({
      minimum: 1,
      default: 1,
      description:
        "Passes over a service's backends when every backend fails (a failover status or a network error): 1 = one pass, the spec's rule; more waits retry_backoff (with jitter) between passes",
    }),
    retry_deadline: Duration(
      "30s",
      "Time budget of one request's backend attempts across all rounds: no round starts (and no attempt of a later round) past it",
    ),
    retry_backoff: Duration(
      "250ms",
      "Wait before the second pass, doubled for each further one, capped at retry_backoff_max; each wait is a random draw up to it (full jitter)",
    ),
    retry_backoff_max: Duration("5s", "Cap on the wait between passes"),
  },
  "Backend health: failover and ejection of LLM and sync direct proxy backends",
  "See [Backend health](backend-health.md).",
);

export type BackendHealthConfig = Static<typeof BackendHealthSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    backend_health: BackendHealthConfig;
  }
}

/** A 4xx other than 429 is the client's error: another backend would answer the same. */
function statusProblems(statuses: readonly number[]): string[] {
  return statuses
    .filter((status) => status !== 429 && (status < 500 || status > 599))
    .map((status) =>
      `backend_health.failover_statuses: ${status} cannot fail over; list 429 or statuses 500-599 (a 2xx-4xx answer is the backend's answer to the client)`
    );
}

function durationProblems(section: BackendHealthConfig): string[] {
  let base: number;
  let max: number;
  try {
    base = durationMs(section.ejection_time);
    max = durationMs(section.max_ejection_time);
  } catch {
    return []; // a malformed duration is already reported by the schema
  }
  if (base <= 0) {
    return [
      `backend_health.ejection_time: must be a positive duration, got ${
        JSON.stringify(section.ejection_time)
      } (default "30s"); set consecutive_failures: 0 to never eject`,
    ];
  }
  if (max < base) {
    return [
      `backend_health.max_ejection_time: ${formatDuration(max)} is shorter than ejection_time (${
        formatDuration(base)
      }); raise max_ejection_time or lower ejection_time`,
    ];
  }
  return [];
}

function retryProblems(section: BackendHealthConfig): string[] {
  let deadline: number;
  let backoff: number;
  let backoffMax: number;
  try {
    deadline = durationMs(section.retry_deadline);
    backoff = durationMs(section.retry_backoff);
    backoffMax = durationMs(section.retry_backoff_max);
  } catch {
    return []; // a malformed duration is already reported by the schema
  }
  if (deadline <= 0) {
    return [
      `backend_health.retry_deadline: must be a positive duration, got ${
        JSON.stringify(section.retry_deadline)
      } (default "30s"); set retry_rounds: 1 for a single pass`,
    ];
  }
  if (backoffMax < backoff) {
    return [
      `backend_health.retry_backoff_max: ${formatDuration(backoffMax)} is shorter than retry_backoff (${
        formatDuration(backoff)
      }); raise retry_backoff_max or lower retry_backoff`,
    ];
  }
  return [];
}

export const backendHealthSection: ConfigSection<typeof BackendHealthSchema> = {
  key: "backend_health",
  schema: BackendHealthSchema,
  validate: (section) => [...statusProblems(section.failover_statuses), ...durationProblems(section), ...retryProblems(section)],
};
