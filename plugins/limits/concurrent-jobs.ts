/**
 * Concurrent async jobs (docs/design.md#concurrent-jobs): `max_concurrent` bounds a consumer's
 * pending plus processing jobs plus submissions in flight, per service type. A slot is reserved
 * before the upload is read (`admit`); when the job is saved the reservation becomes the job's
 * slot, which is given back when the job ends (`job.terminal`). A submission that ends
 * any other way (rejected, failed, replayed) gives its reservation back when its response
 * is finished.
 *
 * Every slot also carries a deadline, past which the next acquire drops it, so a crash
 * cannot leak one for ever. A job's slot deadline follows its record's life
 * (docs/design.md#concurrent-jobs: a job whose record expired, GET answering 410, is neither
 * pending nor processing): at save it is the pending record's expiry; when the relay starts the job
 * or renews its lease, or the GC reaper requeues it, the record lives longer and `job.expiry` moves
 * the deadline along (`extendJobSlot`). A job that waits in its queue past job_ttl.pending
 * therefore frees its slot when its record expires, and a job still running keeps it.
 */
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { JobRecord } from "../../core/jobs/types.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { slotAcquire, slotConvert, slotExtend } from "./ops.ts";
import type { TypeLimits } from "./table.ts";

/** How long a reservation may stay in flight: an upload slower than this frees its slot early. */
export const RESERVATION_MS = 30 * 60 * 1000;

/**
 * No window resets a concurrency limit: a slot frees when one of the consumer's jobs ends.
 * Clients are told to try again shortly.
 */
const RETRY_AFTER_SECONDS = 1;

export const LIMIT_HEADER = "x-concurrent-limit";
export const REMAINING_HEADER = "x-concurrent-remaining";

interface Reservation {
  key: string;
  member: string;
  /** Set when the job was saved: the slot then belongs to the job. */
  saved: boolean;
}

declare module "../../core/pipeline/context.ts" {
  interface RequestVars {
    /** The concurrent-job slot this submission reserved. */
    jobSlot: Reservation;
  }
}

export interface JobSlotDeps extends LimitDeps {
  /** How long a saved job's record lives while it waits (job_ttl.pending, ms): its slot's first deadline. */
  pendingTtlMs(): number;
}

export async function reserveJobSlot(deps: JobSlotDeps, ctx: RequestContext, consumer: string, limits: TypeLimits): Promise<void> {
  if (limits.maxConcurrent === 0) return;
  const key = limitKeys.concurrentJobs(ctx.serviceType, consumer);
  const member = deps.newId();
  const now = deps.clock.now();
  let taken: number;
  let inUse: number;
  try {
    [taken, inUse] = await deps.kv.run(slotAcquire, [key], [now, limits.maxConcurrent, member, now + RESERVATION_MS]);
  } catch (error) {
    return failOpen(deps, "rate", "concurrent_jobs", ctx.serviceType, error);
  }
  ctx.responseHeaders.set(LIMIT_HEADER, String(limits.maxConcurrent));
  ctx.responseHeaders.set(REMAINING_HEADER, String(Math.max(0, limits.maxConcurrent - inUse)));
  if (taken === 0) {
    throw errors.concurrentJobsExceeded(
      `concurrent job limit reached for service type "${ctx.serviceType}": ${limits.maxConcurrent} jobs pending or processing; retry when one of them has finished`,
      RETRY_AFTER_SECONDS,
    );
  }
  const reservation: Reservation = { key, member, saved: false };
  ctx.vars.jobSlot = reservation;
  ctx.defer(async () => {
    if (reservation.saved) return;
    try {
      await deps.kv.zrem(key, member);
    } catch (error) {
      deps.log.warn("concurrent_slot_release_failed", { service_type: ctx.serviceType, error, message: "the slot frees itself at its deadline" });
    }
  });
}

/** The job is saved: its reservation now counts the job until it ends. */
export async function convertJobSlot(deps: JobSlotDeps, ctx: RequestContext, job: JobRecord): Promise<void> {
  const reservation = ctx.vars.jobSlot;
  if (!reservation) return;
  // Even if the conversion fails below, the reservation must stay: the job exists and counts.
  reservation.saved = true;
  const now = deps.clock.now();
  try {
    await deps.kv.run(slotConvert, [reservation.key], [now, reservation.member, job.id, now + deps.pendingTtlMs()]);
  } catch (error) {
    failOpen(deps, "rate", "concurrent_jobs", job.service_type, error);
  }
}

/** The job's record lives until `expiresAt` now (it started, or its lease was renewed): so does its slot. */
export async function extendJobSlot(deps: LimitDeps, job: JobRecord, expiresAt: number): Promise<void> {
  if (job.consumer_name === undefined || job.consumer_name === "") return;
  try {
    await deps.kv.run(slotExtend, [limitKeys.concurrentJobs(job.service_type, job.consumer_name)], [deps.clock.now(), job.id, expiresAt]);
  } catch (error) {
    failOpen(deps, "rate", "concurrent_jobs", job.service_type, error);
  }
}

/** A job ended: its slot is free. */
export async function releaseJobSlot(deps: LimitDeps, job: JobRecord): Promise<void> {
  if (job.consumer_name === undefined || job.consumer_name === "") return;
  try {
    await deps.kv.zrem(limitKeys.concurrentJobs(job.service_type, job.consumer_name), job.id);
  } catch (error) {
    failOpen(deps, "rate", "concurrent_jobs", job.service_type, error);
  }
}
