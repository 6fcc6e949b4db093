/**
 * Phase 0, the processing-queue reaper (docs/design.md#job-states and
 * docs/design.md#background-gc): a job in `relay:<model>:processing` whose relay lease
 * (`relay-lease:<id>`, relay.lease_seconds, renewed while the relay works) is gone was claimed by a
 * relay that stopped: crashed, killed, or cut off from the store. It goes back to its queue head
 * while it has reap attempts left, else it is failed and dead-lettered. Each reclaim is one atomic
 * op (ops.ts `gcReap`), so replicas reaping at the same moment reclaim each job exactly once.
 */
import { formatDuration } from "../../core/config/duration.ts";
import { NOTIFY_GRACE_MS } from "../../core/jobs/notify-outbox.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import type { GcContext } from "./context.ts";
import { afterGcFailed } from "./failed.ts";
import { walkList } from "./lists.ts";
import { gcReap, type ReapOutcome } from "./ops.ts";
import { REQUEUE_END } from "./settings.ts";

export interface ReapCounts {
  requeued: number;
  deadletter: number;
}

function deadLetterError(maxAttempts: number): string {
  return (
    `the relay running this job stopped renewing its lease (crashed, killed or lost the key-value store) more than ` +
    `lifecycle.gc.max_reap_attempts (${maxAttempts}) times; the job was given up and moved to the dead-letter list`
  );
}

/** Reaps one model's processing list. */
export async function reapModel(ctx: GcContext, model: string, signal: AbortSignal): Promise<ReapCounts> {
  const counts: ReapCounts = { requeued: 0, deadletter: 0 };
  const keys = ctx.jobs.keys;
  await walkList(ctx.kv, keys.processing(model), signal, async (ids) => {
    // One round trip tells which entries still have a lease: those are left alone unread.
    const leases = await ctx.kv.mget(ids.map((id) => keys.lease(id)));
    let removed = 0;
    for (const [i, id] of ids.entries()) {
      if (leases[i] !== null) continue;
      const outcome = await reapOne(ctx, model, id);
      if (outcome === "requeued" || outcome === "deadletter") counts[outcome]++;
      // Every outcome but these took the entry out of the list (ours or another replica's LREM).
      if (outcome !== "leased" && outcome !== "gone") removed++;
    }
    return removed;
  });
  return counts;
}

async function reapOne(ctx: GcContext, model: string, id: string): Promise<ReapOutcome> {
  const { jobs, settings } = ctx;
  const job = await jobs.get(id);
  // No record: a queue orphan, which phase 3 removes and counts.
  if (!job) return "gone";
  const keys = [
    jobs.keys.processing(model),
    jobs.keys.queue(model),
    jobs.keys.deadletter(model),
    jobs.keys.record(id),
    jobs.keys.lease(id),
    jobs.keys.tombstone(id),
    jobs.keys.notifyOutbox,
  ];
  if (job.consumer_name !== undefined) keys.push(jobs.keys.consumerIndex(job.consumer_name));
  const now = new Date(ctx.clock.now()).toISOString();
  const pendingTtl = jobs.ttlFor("pending");
  const failedTtl = jobs.ttlFor("failed");
  const error = deadLetterError(settings.maxReapAttempts);
  const [outcome, attempts] = await ctx.kv.run(gcReap, keys, [
    id,
    settings.maxReapAttempts,
    REQUEUE_END,
    pendingTtl,
    pendingTtl + ctx.markerMs,
    failedTtl,
    failedTtl + ctx.markerMs,
    now,
    error,
    ctx.clock.now() + NOTIFY_GRACE_MS,
  ]);
  const fields = { job_id: id, model, reap_attempts: attempts };
  if (outcome === "requeued") {
    // Read after the requeue: never earlier than the record's new expiry.
    ctx.emitExpiry({ ...job, status: "pending" }, ctx.clock.now() + pendingTtl);
    ctx.metrics.reaped(model, "requeued");
    ctx.log.info("gc_job_requeued", fields);
  } else if (outcome === "deadletter") {
    ctx.metrics.reaped(model, "deadletter");
    ctx.log.warn("gc_job_deadlettered", { ...fields, max_reap_attempts: settings.maxReapAttempts, failed_ttl: formatDuration(failedTtl) });
    const failed: JobRecord = { ...job, status: "failed", error, updated_at: now, completed_at: now };
    await afterGcFailed(ctx, failed);
  } else if (outcome === "finished") {
    ctx.log.debug("gc_stale_processing_entry_removed", { ...fields, status: job.status });
  }
  return outcome as ReapOutcome;
}
