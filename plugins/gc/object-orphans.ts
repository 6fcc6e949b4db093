/**
 * Phase 2, object orphan cleanup (docs/design.md#background-gc): files under `jobs/<id>/` whose job
 * record is gone (expired, consumed, purged, or never saved because the submission failed after the
 * upload), once older than `gc.orphan_min_age`. The age guard covers the upload that is
 * stored before its record is saved.
 *
 * Never on partial information: both stores are pinged first, then the whole listing is
 * read and every candidate's record checked; only when all of that succeeded are the
 * orphans deleted. Any read error aborts the phase with nothing deleted. Files whose key
 * does not follow the job layout (keys.ts) are not ours to judge and are left alone.
 */
import type { GcContext } from "./context.ts";
import { BATCH, checkStopped, MAX_ORPHANS_PER_TICK } from "./context.ts";

interface Candidate {
  key: string;
  id: string;
}

/** The orphan keys, read in pages; throws on any read error. */
async function collect(ctx: GcContext, signal: AbortSignal): Promise<string[]> {
  const { jobs } = ctx;
  const cutoff = ctx.clock.now() - ctx.settings.orphanMinAgeMs;
  const orphans: string[] = [];
  let batch: Candidate[] = [];
  const check = async () => {
    const ids = [...new Set(batch.map((c) => c.id))];
    const present = await Promise.all(ids.map((id) => ctx.kv.exists(jobs.keys.record(id))));
    const gone = new Set(ids.filter((_, i) => !present[i]));
    for (const candidate of batch) if (gone.has(candidate.id)) orphans.push(candidate.key);
    batch = [];
  };
  for await (const info of ctx.objects.list(jobs.keys.objectPrefix)) {
    checkStopped(signal);
    if (info.lastModified.getTime() > cutoff) continue;
    const id = jobs.keys.idOfObjectKey(info.key);
    if (id === undefined) continue;
    batch.push({ key: info.key, id });
    if (batch.length >= BATCH) {
      await check();
      if (orphans.length >= MAX_ORPHANS_PER_TICK) break;
    }
  }
  await check();
  return orphans.slice(0, MAX_ORPHANS_PER_TICK);
}

/** Resolves with the number of files deleted, or undefined when the phase aborted. */
export async function sweepObjectOrphans(ctx: GcContext, signal: AbortSignal): Promise<number | undefined> {
  let orphans: string[];
  try {
    await ctx.kv.ping();
    await ctx.objects.ping();
    orphans = await collect(ctx, signal);
  } catch (error) {
    checkStopped(signal);
    ctx.log.warn("gc_phase_aborted", { phase: "object-orphans", message: "a store read failed before any deletion; nothing was deleted", error });
    return undefined;
  }
  let deleted = 0;
  for (const key of orphans) {
    checkStopped(signal);
    try {
      await ctx.objects.delete(key);
      deleted++;
    } catch (error) {
      // The rest would most likely fail the same way; they are still orphans next tick.
      ctx.log.warn("gc_orphan_delete_failed", { key, error });
      break;
    }
  }
  if (deleted > 0) ctx.log.info("gc_object_orphans_deleted", { count: deleted });
  return deleted;
}
