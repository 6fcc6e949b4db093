/**
 * The delivery state machine. A new notification is written to the store (leased) before
 * its inline attempt, so a crash during that attempt still leaves a retry behind. Retries
 * are taken from the shared schedule with an atomic claim, so with several replicas each
 * attempt is made by exactly one of them.
 *
 *   attempt -> delivered (2xx/3xx/4xx)                  -> record removed, result consumed
 *           -> failed, attempts < max (5xx/network)     -> rescheduled after the backoff
 *           -> failed, attempts = max, or refused target -> dead-lettered
 */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import { attemptDelivery, type AttemptOutcome, type AttemptSettings } from "./attempt.ts";
import { retryDelayMs } from "../../core/backoff.ts";
import type { CreateMode, DeliveryQueue, DeliveryRecord } from "./queue.ts";

/** A job that reached a terminal state and has a callback URL. */
export interface TerminalJob {
  jobId: string;
  serviceType: string;
  status: string;
  result?: unknown;
  error?: string;
  /** When the job reached its terminal state (ms since epoch or ISO 8601). */
  completedAt: number | string;
  callbackUrl: string;
}

export interface DispatcherOptions {
  queue: DeliveryQueue;
  attempt: AttemptSettings;
  /** `webhooks.max_retries`: attempts in total, the inline one included. */
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
  /** How long an attempt under way holds its delivery before another process may take it. */
  leaseMs: number;
  /** Retries attempted at once by this process. */
  concurrency: number;
  clock: Clock;
  log: Logger;
  /** Called after a successful delivery (result consumption); errors are logged, not retried. */
  onDelivered(record: DeliveryRecord): Promise<void>;
  observe: { delivered(): void; deadLettered(): void; depth(value: number): void };
}

/**
 * A notification of something other than a job's end (a batch's), sent with the same signing,
 * retries and dead letters: `id` names the delivery (one per id) and is sent as X-Job-ID.
 */
export interface EventNotification {
  id: string;
  /** What the notification is about, for the retry and dead-letter views (`service_type`): "batch". */
  kind: string;
  /** The event's status (`batch.completed`, ...), for the same views. */
  status: string;
  url: string;
  /** The exact JSON body. */
  body: string;
}

/**
 * docs/design.md#webhook-body: `error` is "" when there is none; `result` is null when the job has
 * none.
 */
export function notificationBody(job: TerminalJob): string {
  const completedAt = typeof job.completedAt === "number" ? new Date(job.completedAt).toISOString() : job.completedAt;
  return JSON.stringify({
    job_id: job.jobId,
    service_type: job.serviceType,
    status: job.status,
    result: job.result ?? null,
    error: job.error ?? "",
    completed_at: completedAt,
  });
}

export class Dispatcher {
  private readonly inflight = new Set<Promise<void>>();
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly options: DispatcherOptions) {}

  /**
   * Persists the delivery, then makes the inline attempt. Resolves when that attempt is
   * settled; never rejects (failures are logged). `job` may still be in the making (its
   * result being read): a runtime closing waits for it either way. `mode` "listed" is the
   * outbox sweep's (see DeliveryQueue.create).
   */
  dispatch(job: TerminalJob | Promise<TerminalJob>, mode: CreateMode = "any"): Promise<void> {
    return this.track(Promise.resolve(job).then((ready) => this.persistAndAttempt(ready, mode)));
  }

  /** Persists an event's delivery, then makes its inline attempt (as `dispatch` for a job). */
  dispatchEvent(event: EventNotification): Promise<void> {
    const now = this.options.clock.now();
    const record: DeliveryRecord = {
      id: event.id,
      job_id: event.id,
      service_type: event.kind,
      status: event.status,
      url: event.url,
      body: event.body,
      attempts: 1,
      created_at: new Date(now).toISOString(),
    };
    return this.track(this.persistRecordAndAttempt(record, "any"));
  }

  /** Deliveries this process has under way (the outbox sweep takes no more than the room left). */
  get busy(): number {
    return this.inflight.size;
  }

  /** Claims due retries and starts them; does not wait for them (see `idle`). */
  poll(): Promise<void> {
    this.polling = this.claimAndStart();
    return this.polling;
  }

  /** Resolves when every attempt this process started has settled. */
  async idle(): Promise<void> {
    // A poll under way may still start attempts: wait for it before looking at the attempts.
    await this.polling.catch(() => {});
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private async claimAndStart(): Promise<void> {
    const { queue, clock, observe } = this.options;
    const room = this.options.concurrency - this.inflight.size;
    if (room > 0) {
      const now = clock.now();
      const due = await queue.claim(now, room, now + this.options.leaseMs);
      for (const id of due) void this.track(this.retry(id));
    }
    observe.depth(await queue.depth());
  }

  private persistAndAttempt(job: TerminalJob, mode: CreateMode): Promise<void> {
    const record: DeliveryRecord = {
      id: job.jobId,
      job_id: job.jobId,
      service_type: job.serviceType,
      status: job.status,
      url: job.callbackUrl,
      body: notificationBody(job),
      attempts: 1,
      created_at: new Date(this.options.clock.now()).toISOString(),
    };
    return this.persistRecordAndAttempt(record, mode);
  }

  private async persistRecordAndAttempt(record: DeliveryRecord, mode: CreateMode): Promise<void> {
    const { queue, clock, log } = this.options;
    // Stored (leased) before the attempt: if this process dies during it, the delivery becomes due again.
    if (!(await queue.create(record, clock.now() + this.options.leaseMs, mode))) {
      log.info("webhook_duplicate_ignored", { job_id: record.job_id });
      return;
    }
    await this.attemptAndSettle(record);
  }

  private async retry(id: string): Promise<void> {
    const { queue, log } = this.options;
    // The claim leased it: from here on a crash makes the delivery due again, not lost.
    const record = await queue.load(id);
    if (!record) {
      // Finished by someone else, or its record expired: nothing left to deliver.
      log.warn("webhook_record_missing", { delivery: id });
      await queue.finish(id);
      return;
    }
    if (record.attempts >= this.options.maxAttempts) {
      // The last attempt started but never reported back (its process died), or max_retries
      // was lowered by a reload: either way no attempt is left.
      const note = `no attempt left (max_retries ${this.options.maxAttempts}); the last one never reported an outcome`;
      record.last_error = record.last_error ? `${record.last_error}; ${note}` : note;
      await this.deadLetter(record);
      return;
    }
    record.attempts += 1;
    await queue.save(record);
    await this.attemptAndSettle(record);
  }

  private async attemptAndSettle(record: DeliveryRecord): Promise<void> {
    const outcome = await attemptDelivery({ url: record.url, jobId: record.job_id, body: record.body }, this.options.attempt);
    await this.settle(record, outcome);
  }

  private async settle(record: DeliveryRecord, outcome: AttemptOutcome): Promise<void> {
    const { queue, clock, log, observe } = this.options;
    if (outcome.delivered) {
      await queue.finish(record.id);
      observe.delivered();
      log.info("webhook_delivered", { job_id: record.job_id, status: outcome.status, attempts: record.attempts });
      await this.options.onDelivered(record).catch((error: unknown) => log.error("webhook_consume_failed", { job_id: record.job_id, error }));
      return;
    }
    record.last_error = outcome.error;
    if (!outcome.retry || record.attempts >= this.options.maxAttempts) {
      await this.deadLetter(record);
      return;
    }
    const delay = retryDelayMs(record.attempts, this.options.backoffMs, this.options.maxBackoffMs);
    await queue.save(record);
    await queue.schedule(record.id, clock.now() + delay);
    log.info("webhook_retry_scheduled", { job_id: record.job_id, attempts: record.attempts, delay_ms: delay, error: outcome.error });
  }

  private async deadLetter(record: DeliveryRecord): Promise<void> {
    const entry = await this.options.queue.deadLetter(record, new Date(this.options.clock.now()).toISOString());
    this.options.observe.deadLettered();
    this.options.log.warn("webhook_dead_lettered", { ...entry });
  }

  private track(work: Promise<void>): Promise<void> {
    const tracked = work.catch((error: unknown) => this.options.log.error("webhook_delivery_failed", { error }));
    const entry = tracked.finally(() => this.inflight.delete(entry));
    this.inflight.add(entry);
    return entry;
  }
}
