/** What every GC phase works with: one tick's view of the stores, the job store and the settings. */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";
import type { JobRecord, JobStore } from "../../core/jobs/types.ts";
import type { GcMetrics } from "./metrics.ts";
import type { GcSettings } from "./settings.ts";

/** Entries per LRANGE, keys per SCAN page, records checked per round of reads. */
export const BATCH = 100;

/**
 * Orphans one tick collects before deleting (phases 2 and 3): deletions start only after
 * every read of the collection succeeded, so the candidates are held in memory; the cap
 * keeps that bounded after an outage left many orphans (the rest go on the next tick).
 */
export const MAX_ORPHANS_PER_TICK = 10_000;

export interface GcContext {
  kv: KvStore;
  objects: ObjectStore;
  jobs: JobStore;
  clock: Clock;
  log: Logger;
  metrics: GcMetrics;
  settings: GcSettings;
  /** Tombstone lifetime beyond the record (jobs.expired_marker_ttl), for status changes. */
  markerMs: number;
  /** `job.terminal` for a job the GC ended (webhooks fire on it). */
  emitTerminal(job: JobRecord): void;
  /** `job.expiry` for a job the GC requeued (its record lives a pending TTL from now). */
  emitExpiry(job: JobRecord, expiresAt: number): void;
}

/** Thrown when the runtime closes mid-tick; the tick stops without deleting anything more. */
export class GcStopped extends Error {
  override name = "GcStopped";
}

export function checkStopped(signal: AbortSignal): void {
  if (signal.aborted) throw new GcStopped("the runtime is closing");
}
