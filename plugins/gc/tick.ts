/**
 * One GC tick: the phases (docs/design.md#background-gc) in order. Phases 0 and 1 act on one job at
 * a time through atomic ops, so a failure on one model is logged and the next model is still
 * served. Phases 2 and 3 delete only what a complete, error-free read proved orphaned.
 */
import type { GcContext } from "./context.ts";
import { BATCH, checkStopped, GcStopped } from "./context.ts";
import { queueModels } from "../../core/jobs/queue-models.ts";
import { sweepObjectOrphans } from "./object-orphans.ts";
import { sweepQueueOrphans } from "./queue-orphans.ts";
import { reapModel } from "./reaper.ts";
import { sweepStalePending } from "./stale-pending.ts";

export interface TickSummary {
  requeued: number;
  deadlettered: number;
  stale_failed: number;
  /** Undefined when the phase did not run or aborted. */
  object_orphans?: number;
  queue_orphans?: number;
}

async function perModel(ctx: GcContext, phase: string, models: readonly string[], run: (model: string) => Promise<void>): Promise<void> {
  for (const model of models) {
    try {
      await run(model);
    } catch (error) {
      if (error instanceof GcStopped) throw error;
      ctx.log.warn("gc_phase_failed", { phase, model, error });
    }
  }
}

async function phases(ctx: GcContext, signal: AbortSignal, summary: TickSummary): Promise<void> {
  const { settings } = ctx;
  let models: string[] | undefined;
  try {
    models = await queueModels(ctx.kv, ctx.jobs, { count: BATCH, beforePage: () => checkStopped(signal) });
  } catch (error) {
    if (error instanceof GcStopped) throw error;
    ctx.log.warn("gc_models_scan_failed", { message: "visiting the configured models only; queue orphan cleanup is skipped", error });
  }
  const visit = models ?? ctx.jobs.queueModels();

  if (settings.enabled) {
    await perModel(ctx, "reaper", visit, async (model) => {
      const counts = await reapModel(ctx, model, signal);
      summary.requeued += counts.requeued;
      summary.deadlettered += counts.deadletter;
    });
  }
  if (settings.pendingMaxAgeMs > 0) {
    await perModel(ctx, "stale-pending", visit, async (model) => {
      summary.stale_failed += await sweepStalePending(ctx, model, signal);
    });
  }
  if (settings.enabled) {
    summary.object_orphans = await sweepObjectOrphans(ctx, signal);
    summary.queue_orphans = await sweepQueueOrphans(ctx, models, signal);
  }
}

export async function runTick(ctx: GcContext, signal: AbortSignal): Promise<TickSummary> {
  const started = ctx.clock.now();
  const summary: TickSummary = { requeued: 0, deadlettered: 0, stale_failed: 0 };
  try {
    await phases(ctx, signal, summary);
  } catch (error) {
    // The runtime is closing (reload or shutdown): the next runtime's GC carries on.
    if (!(error instanceof GcStopped)) throw error;
  }
  const acted = summary.requeued + summary.deadlettered + summary.stale_failed + (summary.object_orphans ?? 0) + (summary.queue_orphans ?? 0);
  const fields = { ...summary, duration_ms: ctx.clock.now() - started };
  // A quiet tick every interval on every replica is noise at info level.
  if (acted > 0) ctx.log.info("gc_tick", fields);
  else ctx.log.debug("gc_tick", fields);
  return summary;
}
