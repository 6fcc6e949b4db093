/**
 * Record lifetimes (docs/design.md#job-lifetimes): a per-status `lifecycle.job_ttl` value wins,
 * then `global`, then a 2 h safety net, so a record never lives forever by accident.
 *
 * The spec names TTLs for pending, completed and failed only. A processing job keeps the
 * pending TTL (it is still unfinished work), reset when it starts; while a relay holds its
 * lease, every lease renewal extends the record to the lease plus that TTL
 * (JobStore.renewLease), so a job running longer than the pending TTL is not expired under
 * the relay. A cancelled job takes the failed TTL (it ended without a result).
 */
import { durationMs } from "../../core/config/duration.ts";
import type { JobStatus } from "../../core/jobs/types.ts";
import type { JobLifetimes, JobsConfig } from "./config.ts";

export const SAFETY_NET_TTL_MS = 2 * 60 * 60 * 1000;

export function jobTtlMs(lifetimes: Pick<JobLifetimes, "job_ttl">, status: JobStatus): number {
  const ttl = lifetimes.job_ttl;
  const specific = status === "completed" ? ttl.completed : status === "failed" || status === "cancelled" ? ttl.failed : ttl.pending;
  return durationMs(specific) || durationMs(ttl.global) || SAFETY_NET_TTL_MS;
}

/** How long after the record the tombstone lives (positive: config validation refuses 0s). */
export function markerTtlMs(jobs: JobsConfig): number {
  return durationMs(jobs.expired_marker_ttl);
}
