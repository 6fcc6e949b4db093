/**
 * The `backend_health:` section: which backend answers fail over to the next backend, and how
 * long a failing backend sits out (Envoy's outlier detection is the model).
 */
import { Type, type Static } from "@sinclair/typebox";
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
    .map((status) => `backend_health.failover_statuses: ${status} cannot fail over; list 429 or statuses 500-599 (a 2xx-4xx answer is the backend's answer to the client)`);
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
  if (base <= 0) return [`backend_health.ejection_time: must be a positive duration, got ${JSON.stringify(section.ejection_time)} (default "30s"); set consecutive_failures: 0 to never eject`];
  if (max < base) return [`backend_health.max_ejection_time: ${formatDuration(max)} is shorter than ejection_time (${formatDuration(base)}); raise max_ejection_time or lower ejection_time`];
  return [];
}

export const backendHealthSection: ConfigSection<typeof BackendHealthSchema> = {
  key: "backend_health",
  schema: BackendHealthSchema,
  validate: (section) => [...statusProblems(section.failover_statuses), ...durationProblems(section)],
};
