/**
 * Counts usage from the events of a request's life, after the response, with at most one
 * store round trip per request (`usageRecord`):
 *
 * - sync and LLM: `request.finished` counts the request (when it was served: status below
 *   400) and carries the tokens its `llm.usage` event left waiting (the event comes first,
 *   from inside the handler, so the two become one write);
 * - async: `job.submitted` counts the submission as a request and a job (status polls and
 *   refused submissions also finish as "async" requests and are not usage);
 * - `relay.processed` adds inference seconds, in whichever process ran the job.
 *
 * Anonymous requests (no consumer) are not counted. Store errors are logged and lost:
 * usage never fails a request.
 */
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { GatewayEvents } from "../../core/plugins/types.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { LlmUsageEvent } from "../../core/llm/usage.ts";
import type { JobRecord } from "../async-jobs/types.ts";
import { DAY_MS, labelOf } from "./calendar.ts";
import { usageKeys } from "./keys.ts";
import { usageRecord } from "./ops.ts";

/** Spec 2.9: cross-consumer daily and weekly buckets expire; monthly ones are kept. */
export const DAILY_TTL_MS = 400 * DAY_MS;
export const WEEKLY_TTL_MS = 800 * DAY_MS;

/**
 * Tokens waiting for their request's `request.finished`. Bounded: if finish events ever
 * stopped coming, tokens are written on their own instead of piling up here.
 */
const MAX_WAITING = 10_000;

interface Increments {
  requests?: number;
  jobs?: number;
  processingSeconds?: number;
  prompt?: number;
  completion?: number;
}

export interface RecorderDeps {
  kv: KvStore;
  clock: Clock;
  log: Logger;
  /** `usage.retention` in ms; 0 = all-time. */
  retentionMs: number;
}

export class UsageRecorder {
  private readonly waiting = new Map<string, { prompt: number; completion: number }>();

  constructor(private readonly deps: RecorderDeps) {}

  tokens(event: LlmUsageEvent): void {
    if (event.consumer === "" || event.serviceType === "") return;
    const id = `${event.consumer}\n${event.serviceType}`;
    const held = this.waiting.get(id);
    if (held) {
      held.prompt += event.prompt;
      held.completion += event.completion;
    } else if (this.waiting.size < MAX_WAITING) {
      this.waiting.set(id, { prompt: event.prompt, completion: event.completion });
    } else {
      void this.write(event.consumer, event.serviceType, { prompt: event.prompt, completion: event.completion });
    }
  }

  finished(event: GatewayEvents["request.finished"]): void {
    const { consumer, serviceType } = event;
    if (event.mode === "admin" || event.mode === "async" || consumer === undefined || serviceType === "") return;
    const id = `${consumer}\n${serviceType}`;
    const held = this.waiting.get(id);
    if (held) this.waiting.delete(id);
    const served = event.status < 400 ? 1 : 0;
    if (!served && !held) return;
    void this.write(consumer, serviceType, { requests: served, prompt: held?.prompt, completion: held?.completion });
  }

  submitted(job: JobRecord): void {
    if (job.consumer_name === undefined || job.consumer_name === "") return;
    void this.write(job.consumer_name, job.service_type, { requests: 1, jobs: 1 });
  }

  processed(event: GatewayEvents["relay.processed"]): void {
    if (event.consumer === undefined || event.consumer === "" || !(event.seconds > 0)) return;
    void this.write(event.consumer, event.serviceType, { processingSeconds: event.seconds });
  }

  /** One round trip: the consumer's record, the indexes and the three calendar buckets. */
  async write(consumer: string, type: string, counts: Increments): Promise<void> {
    const now = this.deps.clock.now();
    try {
      await this.deps.kv.run(
        usageRecord,
        [
          usageKeys.consumer(consumer),
          usageKeys.consumers,
          usageKeys.rank(type),
          usageKeys.bucket("daily", type, labelOf("daily", now)),
          usageKeys.bucket("weekly", type, labelOf("weekly", now)),
          usageKeys.bucket("monthly", type, labelOf("monthly", now)),
        ],
        [
          consumer,
          now,
          this.deps.retentionMs,
          DAILY_TTL_MS,
          WEEKLY_TTL_MS,
          usageKeys.fieldPrefix(type),
          Math.round(counts.requests ?? 0),
          Math.round(counts.jobs ?? 0),
          Math.round(counts.prompt ?? 0),
          Math.round(counts.completion ?? 0),
          counts.processingSeconds ?? 0,
        ],
      );
    } catch (error) {
      this.deps.log.warn("usage_not_recorded", { consumer, service_type: type, error });
    }
  }
}
