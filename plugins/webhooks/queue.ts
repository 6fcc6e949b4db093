/**
 * The durable delivery schedule in the key-value store, shared by every replica and
 * surviving restarts:
 *
 *   webhook:retries            sorted set: delivery id -> due time (ms since epoch)
 *   webhook:delivery:<id>      JSON `DeliveryRecord` (the exact body, attempts so far)
 *   webhook:deadletter         list of JSON `DeadLetterEntry` (docs/design.md#delivery-rules;
 *                              drained only by an operator's redelivery, deadletters.ts)
 *
 * A delivery being attempted stays in the schedule with a lease as its due time, so if
 * the process dies mid-attempt the delivery becomes due again when the lease runs out.
 *
 * Creating a delivery also takes its job off the job store's notification outbox (see
 * outbox.ts), in the same atomic op (ops.ts `deliveryCreate`).
 */
import { claimDue } from "../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { deadLetterRedeliver, deadLetterTake, deliveryCreate } from "./ops.ts";

export const RETRIES_KEY = "webhook:retries";
export const DEADLETTER_KEY = "webhook:deadletter";
const RECORD_PREFIX = "webhook:delivery:";

export interface DeliveryRecord {
  /** The delivery id: the job id (one terminal notification per job). */
  id: string;
  job_id: string;
  service_type: string;
  status: string;
  url: string;
  /** The raw JSON body, sent byte for byte on every attempt (the signature covers it). */
  body: string;
  /** Attempts started so far, counted before each attempt so a crash cannot add attempts. */
  attempts: number;
  created_at: string;
  last_error?: string;
}

export interface DeadLetterEntry {
  job_id: string;
  service_type: string;
  url: string;
  attempts: number;
  failed_at: string;
  last_error: string;
  /**
   * The job's status and the exact notification body, kept for a redelivery (entries written by
   * earlier versions have neither).
   */
  status?: string;
  body?: string;
}

/**
 * Which notifications may create a delivery: "any" for a job that just ended in this process;
 * "listed" for one the outbox sweep found, only while the outbox still names it.
 */
export type CreateMode = "any" | "listed";

export class DeliveryQueue {
  constructor(
    private readonly kv: KvStore,
    /** How long a record outlives its last write: a safety net for records whose schedule entry was lost. */
    private readonly recordTtlMs: number,
    /** The job store's notification outbox key; undefined when no job store runs in this process. */
    private readonly outboxKey: () => string | undefined = () => undefined,
  ) {}

  /**
   * Stores a new delivery leased until `leaseUntil` and takes its job off the notification
   * outbox, atomically. False when a delivery for that id already exists (or, "listed",
   * when the outbox no longer names the job): the outbox entry is gone either way.
   */
  async create(record: DeliveryRecord, leaseUntil: number, mode: CreateMode = "any"): Promise<boolean> {
    const outbox = this.outboxKey();
    const keys = [RECORD_PREFIX + record.id, RETRIES_KEY, ...(outbox === undefined ? [] : [outbox])];
    return (await this.kv.run(deliveryCreate, keys, [record.id, JSON.stringify(record), this.recordTtlMs, leaseUntil, mode])) === 1;
  }

  /**
   * Atomically takes due deliveries and leases them until `leaseUntil` in the same step: no two
   * callers receive the same id, and one that dies before it rescheduled or finished a delivery
   * leaves it due again when the lease runs out, never off the schedule.
   */
  claim(now: number, max: number, leaseUntil: number): Promise<string[]> {
    return this.kv.run(claimDue, [RETRIES_KEY], [now, max, leaseUntil]);
  }

  async load(id: string): Promise<DeliveryRecord | null> {
    const text = await this.kv.get(RECORD_PREFIX + id);
    return text === null ? null : (JSON.parse(text) as DeliveryRecord);
  }

  async save(record: DeliveryRecord): Promise<void> {
    await this.kv.set(RECORD_PREFIX + record.id, JSON.stringify(record), this.recordTtlMs);
  }

  /** (Re)schedules a delivery: its next attempt, or the lease of the attempt under way. */
  async schedule(id: string, dueAt: number): Promise<void> {
    await this.kv.zadd(RETRIES_KEY, dueAt, id);
  }

  /**
   * Forgets a delivery: its record, then its schedule entry. In this order a process that dies
   * between the two leaves a schedule entry without a record, which the next claim clears once
   * its lease runs out (`webhook_record_missing`); the other order left a record nothing would
   * read again, there until its TTL.
   */
  async finish(id: string): Promise<void> {
    await this.kv.del(RECORD_PREFIX + id);
    await this.kv.zrem(RETRIES_KEY, id);
  }

  /** Moves a delivery to the dead-letter list: one atomic op (ops.ts `deadLetterTake`). */
  async deadLetter(record: DeliveryRecord, failedAt: string): Promise<DeadLetterEntry> {
    const entry: DeadLetterEntry = {
      job_id: record.job_id,
      service_type: record.service_type,
      url: record.url,
      attempts: record.attempts,
      failed_at: failedAt,
      last_error: record.last_error ?? "",
      status: record.status,
      body: record.body,
    };
    await this.kv.run(deadLetterTake, [DEADLETTER_KEY, RECORD_PREFIX + record.id, RETRIES_KEY], [JSON.stringify(entry), record.id]);
    return entry;
  }

  /** Dead-letter entries as stored (JSON text), oldest first, from `start` to `stop` inclusive (-1: the end). */
  deadLetters(start: number, stop: number): Promise<string[]> {
    return this.kv.lrange(DEADLETTER_KEY, start, stop);
  }

  /** The first `max` deliveries of the schedule with their due times (ms), soonest first. */
  async scheduled(max: number): Promise<Array<[string, number]>> {
    const ids = await this.kv.zrangeByScore(RETRIES_KEY, -Infinity, Infinity, max);
    const scores = await Promise.all(ids.map((id) => this.kv.zscore(RETRIES_KEY, id)));
    return ids.flatMap((id, i) => (scores[i] === null ? [] : [[id, scores[i] as number] as [string, number]]));
  }

  deadLetterCount(): Promise<number> {
    return this.kv.llen(DEADLETTER_KEY);
  }

  /** Swaps the dead-letter entry `entry` (as stored) for `record`, due at `dueAt`: see ops.ts `deadLetterRedeliver`. */
  redeliver(entry: string, record: DeliveryRecord, dueAt: number): Promise<number> {
    return this.kv.run(deadLetterRedeliver, [DEADLETTER_KEY, RECORD_PREFIX + record.id, RETRIES_KEY], [
      entry,
      record.id,
      JSON.stringify(record),
      this.recordTtlMs,
      dueAt,
    ]);
  }

  /** Deliveries waiting for a retry or being attempted. */
  depth(): Promise<number> {
    return this.kv.zcard(RETRIES_KEY);
  }
}
