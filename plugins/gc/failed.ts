/** What follows when the GC ends a job as failed (dead-lettered or stale): the side effects in
 * docs/design.md#job-states. */
import type { JobRecord } from "../../core/jobs/types.ts";
import type { GcContext } from "./context.ts";

/**
 * Deletes the job's input (a failed job never runs again; keys.ts: inputs go when the job
 * is terminal) and emits `job.terminal` with the stored record, so webhooks fire as for a
 * relay's failure. `failed` is the record as the GC wrote it, used if the re-read fails.
 */
export async function afterGcFailed(ctx: GcContext, failed: JobRecord): Promise<void> {
  const input = failed.input_key || ctx.jobs.keys.inputObject(failed.id);
  try {
    await ctx.objects.delete(input);
  } catch (error) {
    // Left behind, it becomes an orphan once the record expires, and phase 2 removes it then.
    ctx.log.warn("gc_input_delete_failed", { job_id: failed.id, key: input, error });
  }
  const stored = await ctx.jobs.get(failed.id).catch(() => null);
  ctx.emitTerminal(stored ?? failed);
}
