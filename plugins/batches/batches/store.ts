/**
 * The batch store: records, indexes, the lines' queues and what a running batch keeps until
 * it ends, all through the atomic operations of ops.ts (the one owner of that layout, keys.ts).
 */
import type { KvStore } from "../../../core/stores/kv.ts";
import { type IdPrefix, idTime } from "../ids.ts";
import { batchKeys } from "../keys.ts";
import { newestFirst, type NewestFirstPage } from "../newest-first.ts";
import {
  batchCreate,
  batchEnd,
  batchTransition,
  leaseReap,
  leaseRenew,
  lineClaim,
  lineFinish,
  lineRetry,
  linesEnqueue,
  scheduleSet,
  scheduleTake,
  segmentCommit,
} from "./ops.ts";
import { type BatchApi, type BatchRecord, type BatchStatus, fromFields, toFields } from "./record.ts";

/** Retries moved to the head of a queue per claim. */
const RETRIES_PER_CLAIM = 50;
/** Lapsed leases requeued per call. */
const REAPED_PER_CALL = 200;

export type Claim = { kind: "line"; entry: string; member: string } | { kind: "busy" | "empty" | "more" };

export interface Finished {
  counted: boolean;
  pending: number;
  remaining: number;
  inFlight: number;
  status: string;
}

/** The id prefix of each API's batches. */
export const ID_PREFIX: Record<BatchApi, IdPrefix> = { openai: "batch_", anthropic: "msgbatch_" };

export function batchIdTime(id: string): number | undefined {
  return idTime(id, "batch_") ?? idTime(id, "msgbatch_");
}

/** A line's queue entry, split. */
export interface Entry {
  batchId: string;
  line: number;
  attempts: number;
}

export function parseEntry(entry: string): Entry {
  const [batchId, line, attempts] = entry.split(":");
  return { batchId, line: Number(line), attempts: Number(attempts) };
}

export const entryOf = (entry: Entry): string => `${entry.batchId}:${entry.line}:${entry.attempts}`;

export class BatchStore {
  constructor(private readonly kv: KvStore) {}

  /** Saves a new batch; with an Idempotency-Key already used, the id of the batch it created. */
  async create(record: BatchRecord, scheduleDue: number, idempotency?: { key: string; ttlMs: number }): Promise<{ created: boolean; id: string }> {
    const created = (idTime(record.id, ID_PREFIX[record.api]) ?? 0) as number;
    const keys = [batchKeys.record(record.id), batchKeys.batchesOf(record.owner), batchKeys.all, batchKeys.active];
    if (idempotency) keys.push(batchKeys.idempotency(record.owner, idempotency.key));
    const pairs = Object.entries(toFields(record)).flat();
    const [outcome, id] = await this.kv.run(batchCreate, keys, [record.id, -created, scheduleDue, idempotency?.ttlMs ?? 0, ...pairs]);
    return { created: outcome === "created", id };
  }

  async get(id: string): Promise<BatchRecord | null> {
    if (batchIdTime(id) === undefined) return null;
    return fromFields(await this.kv.hgetall(batchKeys.record(id)));
  }

  /** A page of `owner`'s batches (every owner's when undefined), newest first, of one API. */
  list(owner: string | undefined, api: BatchApi | undefined, after: string | undefined, limit: number): Promise<NewestFirstPage<BatchRecord>> {
    const afterTime = after === undefined ? undefined : batchIdTime(after);
    const cursor = after !== undefined && afterTime !== undefined ? { after, afterTime } : undefined;
    const key = owner === undefined ? batchKeys.all : batchKeys.batchesOf(owner);
    return newestFirst(this.kv, key, cursor, limit, batchIdTime, async (id) => {
      const batch = await this.get(id);
      if (!batch) return "gone";
      return api === undefined || batch.api === api ? batch : "skip";
    });
  }

  /** Changes the status when it is one of `from`; the status found before ("" when gone). */
  transition(id: string, from: readonly BatchStatus[], to: BatchStatus, fields: Partial<BatchRecord> = {}): Promise<string> {
    return this.kv.run(batchTransition, [batchKeys.record(id)], [from.join(","), to, ...Object.entries(toFields(fields)).flat()]);
  }

  /** Queues lines `from`.. of a validating batch, each to its model's queue; false when done before. */
  async enqueue(id: string, from: number, models: readonly string[]): Promise<boolean> {
    const queues = [...new Set(models)];
    const index = new Map(queues.map((model, i) => [model, i + 2]));
    const keys = [batchKeys.record(id), ...queues.map(batchKeys.queue)];
    return (await this.kv.run(linesEnqueue, keys, [id, from, ...models.map((model) => index.get(model) as number)])) === 1;
  }

  async claim(model: string, options: { now: number; leaseMs: number; token: string; limit: number }): Promise<Claim> {
    const reply = await this.kv.run(
      lineClaim,
      [batchKeys.queue(model), batchKeys.running(model), batchKeys.retry(model)],
      [batchKeys.recordPrefix, batchKeys.done(""), options.now, options.now + options.leaseMs, options.token, options.limit, RETRIES_PER_CLAIM],
    );
    if (reply[0] === "line") return { kind: "line", entry: reply[1], member: `${reply[1]}|${options.token}` };
    return { kind: reply[0] as "busy" | "empty" | "more" };
  }

  async finish(model: string, member: string, entry: Entry, succeeded: boolean, outputLine: string): Promise<Finished> {
    const reply = await this.kv.run(
      lineFinish,
      [batchKeys.running(model), batchKeys.record(entry.batchId), batchKeys.done(entry.batchId), batchKeys.output(entry.batchId)],
      [member, entry.line, succeeded ? "s" : "f", outputLine],
    );
    return { counted: reply[0] === 1, pending: Number(reply[1]), remaining: Number(reply[2]), inFlight: Number(reply[3]), status: String(reply[4]) };
  }

  /** Puts a running line back to run at `due` (with `next` attempts made); false when its lease had lapsed. */
  async retryAt(model: string, member: string, next: Entry, due: number): Promise<boolean> {
    return (await this.kv.run(lineRetry, [batchKeys.running(model), batchKeys.retry(model), batchKeys.record(next.batchId)], [member, entryOf(next), due])) ===
      1;
  }

  renew(model: string, members: readonly string[], deadline: number): Promise<number> {
    return this.kv.run(leaseRenew, [batchKeys.running(model)], [deadline, ...members]);
  }

  reap(model: string, now: number): Promise<number> {
    return this.kv.run(leaseReap, [batchKeys.running(model), batchKeys.queue(model)], [batchKeys.recordPrefix, now, REAPED_PER_CALL]);
  }

  /** Lines of `model` running now, across the deployment. */
  running(model: string): Promise<number> {
    return this.kv.zcard(batchKeys.running(model));
  }

  /** Lines of `model` waiting (queued, or for a retry): entries of ended batches included until they are reached. */
  async waiting(model: string): Promise<number> {
    const [queued, retries] = await Promise.all([this.kv.llen(batchKeys.queue(model)), this.kv.zcard(batchKeys.retry(model))]);
    return queued + retries;
  }

  /** The output lines waiting to be written, by line. */
  pendingOutput(id: string): Promise<Record<string, string>> {
    return this.kv.hgetall(batchKeys.output(id));
  }

  /** Records written segments; false when another flush wrote some of `lines` first. */
  async commitSegments(id: string, segments: readonly string[], lines: readonly string[]): Promise<boolean> {
    const keys = [batchKeys.output(id), batchKeys.segments(id), batchKeys.record(id)];
    return (await this.kv.run(segmentCommit, keys, [segments.length, ...segments, ...lines])) === 1;
  }

  segments(id: string): Promise<string[]> {
    return this.kv.lrange(batchKeys.segments(id), 0, -1);
  }

  /** Which lines ended, and how ("s" or "f"). */
  doneLines(id: string): Promise<Record<string, string>> {
    return this.kv.hgetall(batchKeys.done(id));
  }

  /** A flush of `id` may start: true for one caller at a time (until it ends, or its lease lapses). */
  async lockFlush(id: string, token: string, leaseMs: number): Promise<boolean> {
    return await this.kv.setIfAbsent(batchKeys.flushing(id), token, leaseMs);
  }

  async unlockFlush(id: string): Promise<void> {
    await this.kv.del(batchKeys.flushing(id));
  }

  /** Ends the batch with its final status, when it is in one of `from`; false otherwise. */
  async end(id: string, from: readonly BatchStatus[], to: BatchStatus, retentionMs: number, fields: Partial<BatchRecord>, nowMs: number): Promise<boolean> {
    const kept = [batchKeys.done(id), batchKeys.output(id), batchKeys.segments(id), batchKeys.flushing(id)];
    const reply = await this.kv.run(batchEnd, [batchKeys.record(id), batchKeys.active, batchKeys.notify, ...kept], [
      from.join(","),
      to,
      retentionMs,
      id,
      nowMs,
      ...Object.entries(toFields(fields)).flat(),
    ]);
    return reply === 1;
  }

  /** Ended batches whose webhook was not handed over yet, ended before `before` (ms). */
  unnotified(before: number, max: number): Promise<string[]> {
    return this.kv.zrangeByScore(batchKeys.notify, Number.NEGATIVE_INFINITY, before, max);
  }

  /** The webhook of `id` was handed over (its delivery stored, retries and all). */
  async notified(id: string): Promise<void> {
    await this.kv.zrem(batchKeys.notify, id);
  }

  /** The batches due on the sweep's schedule, each leased until `leaseUntil`. */
  take(now: number, leaseUntil: number, max: number): Promise<string[]> {
    return this.kv.run(scheduleTake, [batchKeys.active], [now, leaseUntil, max]);
  }

  /**
   * When the sweep looks at `id` next (ignored once the batch ended): `due` if sooner than what
   * is set; "extend" sets it whatever (a long piece of work keeping its hold on the batch).
   */
  async schedule(id: string, due: number, mode: "earlier" | "extend" = "earlier"): Promise<void> {
    await this.kv.run(scheduleSet, [batchKeys.active], [due, id, mode === "extend" ? "any" : "earlier"]);
  }

  /** Takes a batch whose record is gone off the schedule. */
  async forget(id: string): Promise<void> {
    await this.kv.zrem(batchKeys.active, id);
  }

  /** Batches not ended yet. */
  activeCount(): Promise<number> {
    return this.kv.zcard(batchKeys.active);
  }
}
