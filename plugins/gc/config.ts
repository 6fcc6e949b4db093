/**
 * The `lifecycle:` section (spec 2.9): what happens to a job once it ended, and the background
 * GC that enforces it. Its rule ties `redis.pending_max_age` (the stale-pending sweep, phase 1
 * of the GC) to the pending job TTL.
 */
import { Type, type Static } from "@sinclair/typebox";
import { durationMs, formatDuration } from "../../core/config/duration.ts";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection, GatewayConfig } from "../../core/config/schema.ts";

export const LifecycleSchema = Section(
  {
    persists_result: Type.Boolean({ default: false, description:
        "false = job record and result deleted after the first consumption (first GET of a completed result, or first successful webhook); true = kept until their TTL", }),
    job_ttl: Section(
      {
        global: Duration("", "Fallback TTL for every status"),
        completed: Duration("", "TTL of completed jobs (takes precedence over global)"),
        pending: Duration("", "TTL of pending jobs"),
        failed: Duration("", "TTL of failed jobs; when all TTLs are empty, a 2h safety net applies"),
      },
      "Job record TTLs (2h safety net when all empty)",
    ),
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

/** The 2 h safety net of spec 2.9 (and 8.5) for a job record TTL nobody configured. */
const JOB_TTL_SAFETY_NET_MS = 2 * 3_600_000;

/**
 * The input object lifetime of spec 2.9: an uploaded input is kept as long as its pending
 * job record, whose TTL is `lifecycle.job_ttl.pending`, else `.global`, else the 2 h safety
 * net (the rule of plugins/async-jobs/ttl.ts; test/plugins/gc/config.test.ts holds the two
 * together).
 */
function inputObjectLifetimeMs(lifecycle: LifecycleConfig): number {
  return durationMs(lifecycle.job_ttl.pending) || durationMs(lifecycle.job_ttl.global) || JOB_TTL_SAFETY_NET_MS;
}

/**
 * Spec 2.9: `redis.pending_max_age` must be shorter than the input object lifetime. At or
 * beyond it, a waiting job's record expires before the stale-pending sweep could fail it,
 * so its caller would see an expired job instead of the sweep's clear error.
 */
function pendingMaxAgeProblems(lifecycle: LifecycleConfig, config: GatewayConfig): string[] {
  let maxAge: number;
  let lifetime: number;
  try {
    maxAge = durationMs(config.redis.pending_max_age);
    lifetime = inputObjectLifetimeMs(lifecycle);
  } catch {
    // A malformed duration is already reported by the schema.
    return [];
  }
  if (maxAge === 0 || maxAge < lifetime) return [];
  return [
    `redis.pending_max_age: ${formatDuration(maxAge)} is not shorter than the input object lifetime, ${formatDuration(lifetime)} ` +
      "(the pending job TTL: lifecycle.job_ttl.pending, else lifecycle.job_ttl.global, else the 2h safety net); " +
      "lower pending_max_age or raise lifecycle.job_ttl.pending",
  ];
}

export const lifecycleSection: ConfigSection<typeof LifecycleSchema> = {
  key: "lifecycle",
  schema: LifecycleSchema,
  validate: pendingMaxAgeProblems,
};
