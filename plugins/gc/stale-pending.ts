/**
 * Phase 1, the stale-pending sweep (docs/design.md#job-states and docs/design.md#background-gc,
 * when `redis.pending_max_age > 0`): a job still waiting in its queue longer than that after it was
 * created becomes failed with an error saying so, leaves the queue, and its input is deleted. Age
 * counts from `created_at`, the age the caller sees: a job the reaper requeued is not made younger.
 *
 * Each job is failed by one atomic op (ops.ts `gcFailStalePending`) that acts only when
 * its LREM took the entry out of the queue, so a relay claiming the job at that moment
 * and the sweep never both win, and replicas sweeping together fail it once.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { NOTIFY_GRACE_MS } from "../../core/jobs/notify-outbox.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import type { GcContext } from "./context.ts";
import { afterGcFailed } from "./failed.ts";
import { walkList } from "./lists.ts";
import { gcFailStalePending } from "./ops.ts";

function staleError(maxAgeMs: number): string {
  return (
    `the job waited in the queue longer than redis.pending_max_age (${formatDuration(maxAgeMs)}) without a relay ` +
    `starting it; it was failed and its input deleted`
  );
}

/** Sweeps one model's queue; resolves with the number of jobs failed. */
export async function sweepStalePending(ctx: GcContext, model: string, signal: AbortSignal): Promise<number> {
  const { jobs, settings } = ctx;
  let failedCount = 0;
  await walkList(ctx.kv, jobs.keys.queue(model), signal, async (ids) => {
    const records = await Promise.all(ids.map((id) => jobs.get(id)));
    const cutoff = ctx.clock.now() - settings.pendingMaxAgeMs;
    let removed = 0;
    for (const job of records) {
      // A missing record is a queue orphan (phase 3); an unreadable created_at cannot be judged.
      if (!job || job.status !== "pending") continue;
      const created = Date.parse(job.created_at);
      if (!Number.isFinite(created) || created >= cutoff) continue;
      if (await failOne(ctx, model, job)) {
        removed++;
        failedCount++;
      }
    }
    return removed;
  });
  return failedCount;
}

async function failOne(ctx: GcContext, model: string, job: JobRecord): Promise<boolean> {
  const { jobs } = ctx;
  const keys = [jobs.keys.queue(model), jobs.keys.record(job.id), jobs.keys.tombstone(job.id), jobs.keys.notifyOutbox];
  if (job.consumer_name !== undefined) keys.push(jobs.keys.consumerIndex(job.consumer_name));
  const now = new Date(ctx.clock.now()).toISOString();
  const ttl = jobs.ttlFor("failed");
  const error = staleError(ctx.settings.pendingMaxAgeMs);
  const failed = await ctx.kv.run(gcFailStalePending, keys, [job.id, ttl, ttl + ctx.markerMs, now, error, ctx.clock.now() + NOTIFY_GRACE_MS]);
  if (failed !== 1) return false;
  ctx.log.info("gc_stale_pending_failed", { job_id: job.id, model, created_at: job.created_at });
  await afterGcFailed(ctx, { ...job, status: "failed", error, updated_at: now, completed_at: now });
  return true;
}
