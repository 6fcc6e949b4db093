/**
 * Phase 3, queue orphan cleanup (docs/design.md#background-gc): entries of `relay:<model>` and
 * `relay:<model>:processing` whose job record is gone (its TTL passed, it was consumed or
 * purged). A relay would claim and drop them one by one; the sweep keeps queue depths
 * honest and frees the lists of models removed from the config.
 *
 * Never on partial information: the store is pinged, the model list must have been read
 * in full, and every list is read and every entry's record checked before the first
 * removal; any read error aborts the phase with nothing removed. Each removal re-checks
 * the record inside an atomic op (ops.ts `gcDropQueueOrphan`).
 */
import type { GcContext } from "./context.ts";
import { checkStopped, MAX_ORPHANS_PER_TICK } from "./context.ts";
import { walkList } from "./lists.ts";
import type { QueueState } from "./metrics.ts";
import { gcDropQueueOrphan } from "./ops.ts";

interface Orphan {
  model: string;
  state: QueueState;
  list: string;
  id: string;
}

const STATES: readonly QueueState[] = ["pending", "processing"];

async function collect(ctx: GcContext, models: readonly string[], signal: AbortSignal): Promise<Orphan[]> {
  const { jobs } = ctx;
  const orphans: Orphan[] = [];
  const enough = () => orphans.length >= MAX_ORPHANS_PER_TICK;
  for (const model of models) {
    for (const state of STATES) {
      if (enough()) return orphans.slice(0, MAX_ORPHANS_PER_TICK);
      const list = state === "pending" ? jobs.keys.queue(model) : jobs.keys.processing(model);
      await walkList(
        ctx.kv,
        list,
        signal,
        async (ids) => {
          const present = await Promise.all(ids.map((id) => ctx.kv.exists(jobs.keys.record(id))));
          for (const [i, id] of ids.entries()) if (!present[i]) orphans.push({ model, state, list, id });
          return 0;
        },
        enough,
      );
    }
  }
  // The last chunk read may overshoot the cap.
  return orphans.slice(0, MAX_ORPHANS_PER_TICK);
}

/**
 * `models` is undefined when the model scan failed: the phase then aborts, since a model
 * known only to the store would be missed. Resolves with the entries removed, or
 * undefined when the phase aborted.
 */
export async function sweepQueueOrphans(ctx: GcContext, models: readonly string[] | undefined, signal: AbortSignal): Promise<number | undefined> {
  let orphans: Orphan[];
  try {
    if (models === undefined) throw new Error("the scan of relay: keys for models failed");
    await ctx.kv.ping();
    orphans = await collect(ctx, models, signal);
  } catch (error) {
    checkStopped(signal);
    ctx.log.warn("gc_phase_aborted", { phase: "queue-orphans", message: "a store read failed before any deletion; nothing was removed", error });
    return undefined;
  }
  let removed = 0;
  for (const orphan of orphans) {
    checkStopped(signal);
    let count: number;
    try {
      count = await ctx.kv.run(gcDropQueueOrphan, [orphan.list, ctx.jobs.keys.record(orphan.id)], [orphan.id]);
    } catch (error) {
      // The store went away mid-way: what is left is still there next tick.
      ctx.log.warn("gc_queue_orphan_remove_failed", { model: orphan.model, state: orphan.state, job_id: orphan.id, error });
      break;
    }
    if (count === 0) continue;
    removed += count;
    ctx.metrics.orphansSwept(orphan.model, orphan.state, count);
    ctx.log.debug("gc_queue_orphan_removed", { model: orphan.model, state: orphan.state, job_id: orphan.id });
  }
  return removed;
}
