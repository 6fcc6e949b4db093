/**
 * The relay worker of one process: claims jobs from every `relay:<model>` queue (round
 * robin over models, head of each queue first) while it has free slots
 * (`relay.concurrency`), and runs each claimed job in the background.
 *
 * `poll` is the body of the relay's background task: it claims until the queues are empty
 * (waiting for a slot whenever all are busy) and then returns; the task runs it again
 * after a short pause. Two relays never run the same job: a claim is an atomic move
 * from the queue to the processing list.
 *
 * Stopping comes in two kinds: `retire` (a hot reload replaced this worker) stops claiming
 * and lets running jobs finish, bounded only by their request timeout, so a reload never
 * restarts a long job; `close` (shutdown) gives them DRAIN_GRACE_MS, then aborts the rest
 * and puts them back at the head of their queues.
 */
import type { Logger } from "../../core/log.ts";
import type { ClaimedJob, JobStore } from "../../core/jobs/types.ts";
import { type RunDeps, runJob } from "./run-job.ts";
import { RelaySlots } from "./slots.ts";

/** How long a stopping relay lets running jobs finish before giving them back to their queues. */
export const DRAIN_GRACE_MS = 5_000;
/** Claim errors (KV down) are logged at most this often. */
const ERROR_LOG_EVERY_MS = 30_000;

export interface RelayOptions {
  concurrency: number;
  leaseMs: number;
  /** Default DRAIN_GRACE_MS. */
  drainGraceMs?: number;
  /** Slots shared with the process's other workers (default: this worker's own). */
  slots?: RelaySlots;
}

export class RelayWorker {
  private readonly running = new Map<string, Promise<void>>();
  private readonly stopControl = new AbortController();
  private readonly slots: RelaySlots;
  private cursor = 0;
  private polling: Promise<void> = Promise.resolve();
  private lastErrorLog = -Infinity;
  private stopping = false;

  constructor(
    private readonly jobs: JobStore,
    private readonly deps: RunDeps,
    private readonly options: RelayOptions,
    private readonly log: Logger,
  ) {
    this.slots = options.slots ?? new RelaySlots();
  }

  /** Jobs running now (for tests and logs). */
  get busy(): number {
    return this.running.size;
  }

  /** One polling round; concurrent calls (a test's runTaskNow during the timer loop) queue up. */
  poll(signal: AbortSignal): Promise<void> {
    const next = this.polling.then(() => this.claimWhileWork(signal));
    this.polling = next.catch(() => undefined);
    return next;
  }

  /** Resolves when no job is running (tests wait on it after a poll). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /** Stops claiming and resolves when the running jobs have ended on their own (hot reload). */
  async retire(): Promise<void> {
    this.stopping = true;
    if (this.running.size > 0) this.log.info("relay_retiring", { running: this.running.size, message: "replaced by a reload; running jobs finish here" });
    await this.idle();
    this.log.info("relay_retired", {});
  }

  /** Stops claiming, lets running jobs finish for a grace period, then gives the rest back. */
  async close(): Promise<void> {
    const grace = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.options.drainGraceMs ?? DRAIN_GRACE_MS);
      void this.idle().then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.stopping = true;
    await grace;
    this.stopControl.abort();
    await this.idle();
  }

  private async claimWhileWork(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.stopping) {
      // Jobs a replaced worker is still finishing count too (RelaySlots).
      if (this.slots.running >= this.options.concurrency) {
        await this.slots.freed(signal);
        continue;
      }
      let claim: ClaimedJob | null;
      try {
        claim = await this.claimNext();
      } catch (error) {
        const now = this.deps.clock.now();
        if (now - this.lastErrorLog >= ERROR_LOG_EVERY_MS) {
          this.lastErrorLog = now;
          this.log.error("relay_claim_failed", { error });
        }
        return;
      }
      if (!claim) return;
      this.start(claim);
    }
  }

  /** The next job over every model's queue, starting after the model served last (fairness): one store round trip. */
  private async claimNext(): Promise<ClaimedJob | null> {
    const models = this.jobs.queueModels();
    const found = await this.jobs.claimFirst(models, this.cursor, this.options.leaseMs);
    if (!found) return null;
    this.cursor = (found.index + 1) % models.length;
    return found.claim;
  }

  private start(claim: ClaimedJob): void {
    this.slots.take();
    const run = runJob(this.deps, claim, this.stopControl.signal)
      .catch((error: unknown) => {
        // The claim stays in the processing list with a lapsing lease: the GC reaper recovers it.
        this.log.error("relay_job_crashed", { job_id: claim.id, model: claim.model, error });
      })
      .finally(() => {
        this.running.delete(claim.id);
        this.slots.give();
      });
    this.running.set(claim.id, run);
  }
}
