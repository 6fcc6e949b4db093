/**
 * The GC's settings: the `lifecycle:` section with its `gc` part (the background GC that enforces
 * what happens to a job once it ended) and `redis.pending_max_age` (the stale-pending sweep, phase
 * 1 of the GC). The section's other fields, the job record lifetimes, are the job store's (async
 * jobs); the rule that ties `pending_max_age` to the pending job TTL reads the TTL that plugin states.
 */
import { type Static, Type } from "@sinclair/typebox";
import { durationMs, formatDuration } from "../../core/config/duration.ts";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigFacts, ConfigSection, SectionFieldSet } from "../../core/config/schema.ts";

export const LifecycleSchema = Section(
  {
    gc: Section(
      {
        enabled: Type.Boolean({ default: false, description: "Run the background GC (lease reaper, orphan cleanup)" }),
        interval: Duration("15m", "GC tick"),
        orphan_min_age: Duration("5m", "Min age of an orphan object before deletion"),
        max_reap_attempts: Type.Integer({
          minimum: 0,
          default: 3,
          description: "Requeues of a job whose relay lease expired before it is dead-lettered",
        }),
      },
      "Background GC",
    ),
  },
  "Job lifecycle",
);

export type LifecycleConfig = Static<typeof LifecycleSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    lifecycle: LifecycleConfig;
  }
}

export const lifecycleSection: ConfigSection<typeof LifecycleSchema> = { key: "lifecycle", schema: LifecycleSchema };

export const PendingMaxAgeFields = Type.Object(
  {
    pending_max_age: Duration("", "Stale-pending sweep age (a pending job older than this fails); empty or 0s = off; must be shorter than the pending job TTL"),
  },
  { notes: "`pending_max_age` is checked against `lifecycle.job_ttl.pending` (else `lifecycle.job_ttl.global`, else 2h)." },
);

/**
 * `redis.pending_max_age` must be shorter than the input object lifetime, which is
 * the pending job TTL (`pendingJobTtlMs`, stated by the job store). At or beyond it, a waiting
 * job's record expires before the stale-pending sweep could fail it, so its caller would see an
 * expired job instead of the sweep's clear error.
 */
function pendingMaxAgeProblems(fields: Static<typeof PendingMaxAgeFields>, facts: Partial<ConfigFacts>): string[] {
  const lifetime = facts.pendingJobTtlMs;
  let maxAge: number;
  try {
    maxAge = durationMs(fields.pending_max_age);
  } catch {
    // A malformed duration is already reported by the schema.
    return [];
  }
  if (maxAge === 0 || lifetime === undefined || maxAge < lifetime) return [];
  return [
    `redis.pending_max_age: ${formatDuration(maxAge)} is not shorter than the input object lifetime, ${formatDuration(lifetime)} ` +
    "(the pending job TTL: lifecycle.job_ttl.pending, else lifecycle.job_ttl.global, else the 2h safety net); " +
    "lower pending_max_age or raise lifecycle.job_ttl.pending",
  ];
}

/** `redis.pending_max_age`: the GC's field in the core's `redis` section (the sweep is the GC's phase 1). */
export const pendingMaxAgeFields: SectionFieldSet<typeof PendingMaxAgeFields> = {
  section: "redis",
  schema: PendingMaxAgeFields,
  validate: (fields, _config, facts) => pendingMaxAgeProblems(fields, facts),
};
