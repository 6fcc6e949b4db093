/**
 * The sweep of every process: requeues the lines whose lease lapsed (a process died or
 * stalled), and takes the batches due on the schedule (`batch:active`) to move each along:
 * validate a new one, resume queueing one whose validation died, end one whose lines are all
 * done, whose window passed, or that was cancelled (once nothing of it is in flight), and
 * finalize one whose finalization died. A batch taken is leased (due again later), so a sweep
 * that dies while working on it leaves it to the next; the work on each runs in the background.
 */
import type { Logger } from "../../../core/log.ts";
import type { LineRules } from "./checks.ts";
import { deleteBatchObjects } from "./chunks.ts";
import { finalize, type FinalizeDeps } from "./finalize.ts";
import { type BatchEnding, type BatchRecord, remainingOf } from "./record.ts";
import { checkInput, enqueueRest, type ValidationDeps } from "./validate.ts";

/** How long the work on a taken batch holds it (renewed while a validation reads). */
export const SWEEP_LEASE_MS = 60_000;
/** A running batch is looked at again after this long (its end is usually noticed by its last line). */
export const CHECK_MS = 5_000;
/** A finalization that found another process's flush under way tries again after this long. */
const AGAIN_MS = 1_000;
const TAKEN_PER_TICK = 20;

export interface SweepDeps extends FinalizeDeps {
  log: Logger;
  maxLines: number;
  maxLineBytes: number;
  models(): readonly string[];
  rulesFor(batch: BatchRecord): LineRules;
  /** A batch reached its final status here (metrics, webhook). */
  ended(batch: BatchRecord): void;
}

export class BatchSweep {
  private readonly work = new Set<Promise<void>>();

  constructor(private readonly deps: SweepDeps) {}

  async tick(): Promise<void> {
    const now = this.deps.now();
    // Lapsed leases only exist while some batch is unfinished.
    if ((await this.deps.store.activeCount()) === 0) return;
    for (const model of this.deps.models()) await this.deps.store.reap(model, now);
    const ids = await this.deps.store.take(now, now + SWEEP_LEASE_MS, TAKEN_PER_TICK);
    for (const id of ids) {
      const work = this.handle(id)
        .catch((error: unknown) => this.deps.log.error("batch_sweep_failed", { batch_id: id, error }))
        .finally(() => this.work.delete(work));
      this.work.add(work);
    }
  }

  /** Resolves when the work this process started on batches has ended. */
  async idle(): Promise<void> {
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
  }

  private async handle(id: string): Promise<void> {
    const { store } = this.deps;
    const batch = await store.get(id);
    if (!batch) return await store.forget(id);
    const now = this.deps.now();
    switch (batch.status) {
      case "validating":
        return await this.validate(batch);
      case "in_progress": {
        if (batch.enqueued < batch.total) await enqueueRest(batch, this.validation(batch.id));
        if (batch.in_flight > 0) return await store.schedule(id, now + CHECK_MS);
        if (remainingOf(batch) === 0) return await this.end(batch, "completed", ["in_progress"]);
        if (now >= batch.expires_ms) return await this.end(batch, "expired", ["in_progress"]);
        return await store.schedule(id, Math.min(batch.expires_ms, now + CHECK_MS));
      }
      case "cancelling":
        if (batch.in_flight > 0) return await store.schedule(id, now + CHECK_MS);
        return await this.finish(batch, "cancelled");
      case "finalizing":
        return await this.finish(batch, batch.ending ?? "completed");
      default:
        // Ended: nothing left to do (it left the schedule as it ended).
        return;
    }
  }

  private validation(id: string): ValidationDeps {
    return {
      store: this.deps.store,
      files: this.deps.files,
      objects: this.deps.objects,
      maxLines: this.deps.maxLines,
      maxLineBytes: this.deps.maxLineBytes,
      now: () => this.deps.now(),
      keepAlive: () => this.deps.store.schedule(id, this.deps.now() + SWEEP_LEASE_MS, "extend"),
    };
  }

  private async validate(batch: BatchRecord): Promise<void> {
    const { store } = this.deps;
    const deps = this.validation(batch.id);
    const checked = await checkInput(batch, this.deps.rulesFor(batch), deps);
    const now = this.deps.now();
    if (!checked.ok) {
      const fields = { errors: checked.errors, failed_at: Math.floor(now / 1000) };
      if (await store.end(batch.id, ["validating"], "failed", this.deps.retentionMs, fields, this.deps.now())) {
        this.deps.ended({ ...batch, ...fields, status: "failed" });
      } else await store.transition(batch.id, ["cancelling"], "cancelling", { errors: checked.errors });
      return;
    }
    const counts = { total: checked.total, chunks: checked.chunks, enqueued: 0 };
    const before = await store.transition(batch.id, ["validating"], "in_progress", { ...counts, in_progress_at: Math.floor(now / 1000) });
    if (before !== "validating") {
      // Cancelled while it was read: its lines are listed as cancelled when it ends.
      if (before === "cancelling") await store.transition(batch.id, ["cancelling"], "cancelling", counts);
      else await deleteBatchObjects(this.deps.objects, batch.id);
      return await store.schedule(batch.id, now);
    }
    await enqueueRest({ ...batch, ...counts, status: "in_progress" }, deps, checked.models);
    await store.schedule(batch.id, Math.min(batch.expires_ms, this.deps.now() + CHECK_MS));
  }

  /** Starts finalizing a running batch (once), then finalizes it. */
  private async end(batch: BatchRecord, ending: BatchEnding, from: ["in_progress"]): Promise<void> {
    const before = await this.deps.store.transition(batch.id, from, "finalizing", { ending, finalizing_at: Math.floor(this.deps.now() / 1000) });
    if (before !== "in_progress") return await this.deps.store.schedule(batch.id, this.deps.now());
    await this.finish({ ...batch, status: "finalizing", ending }, ending);
  }

  private async finish(batch: BatchRecord, ending: BatchEnding): Promise<void> {
    const outcome = await finalize(batch, ending, this.deps);
    if (outcome === "again") return await this.deps.store.schedule(batch.id, this.deps.now() + AGAIN_MS);
    await deleteBatchObjects(this.deps.objects, batch.id);
    const ended = outcome === "ended" ? await this.deps.store.get(batch.id) : null;
    if (ended) this.deps.ended(ended);
  }
}
