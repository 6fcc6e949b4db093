/**
 * The job store on the KV and object stores: records, tombstones, the consumer index and
 * the per-model reliable queues (layout in keys.ts, atomic steps in ops.ts). One instance
 * per runtime, so TTLs and the service list follow hot reloads.
 */
import type { Clock, IdSource } from "../../core/clock.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { Logger } from "../../core/log.ts";
import type { Registry } from "../../core/registry/registry.ts";
import { compareAndDelete } from "../../core/stores/atomic-ops.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";
import { jobKeys } from "../../core/jobs/keys.ts";
import { jobCancel, jobCreate, jobFinish, jobRelease, jobRetry, jobTransition, leaseRenew, relayClaim } from "./ops.ts";
import { fromHash, toHash } from "./record.ts";
import { NOTIFY_GRACE_MS } from "../../core/jobs/notify-outbox.ts";
import type { JobLifetimes, JobsConfig } from "./config.ts";
import { jobTtlMs, markerTtlMs } from "./ttl.ts";
import type {
  ClaimedJob,
  FinishFields,
  JobListQuery,
  JobLookup,
  JobPage,
  JobRecord,
  JobStatus,
  JobStore,
  SubmissionHook,
  Transition,
} from "../../core/jobs/types.ts";

/** Records read per round trip when listing or purging. */
const BATCH = 100;
/** Keys per SCAN page when purging. */
const SCAN_COUNT = 500;

export interface JobStoreDeps {
  kv: KvStore;
  objects: ObjectStore;
  registry: Registry;
  /** This plugin's `lifecycle` fields. */
  lifetimes: JobLifetimes;
  /** The `jobs` section. */
  jobs: JobsConfig;
  clock: Clock;
  ids: IdSource;
  log: Logger;
}

export class KvJobStore implements JobStore {
  readonly keys = jobKeys;
  readonly submissionHooks: SubmissionHook[] = [];
  private readonly kv: KvStore;
  private readonly objects: ObjectStore;

  constructor(private readonly deps: JobStoreDeps) {
    this.kv = deps.kv;
    this.objects = deps.objects;
  }

  get persistsResult(): boolean {
    return this.deps.lifetimes.persists_result;
  }

  ttlFor(status: JobStatus): number {
    return jobTtlMs(this.deps.lifetimes, status);
  }

  modelOf(service: ServiceConfig): string {
    return service.model !== "" ? service.model : service.type;
  }

  serviceOf(job: Pick<JobRecord, "service_type" | "model">): ServiceConfig | undefined {
    return this.deps.registry.servicesOfType(job.service_type).find((s) => this.modelOf(s) === job.model);
  }

  queueModels(): string[] {
    return [...new Set(this.deps.registry.services.map((s) => this.modelOf(s)))];
  }

  addSubmissionHook(hook: SubmissionHook): void {
    if (this.submissionHooks.some((h) => h.name === hook.name)) throw new Error(`submission hook "${hook.name}" is registered twice`);
    this.submissionHooks.push(hook);
  }

  async create(job: JobRecord): Promise<void> {
    const ttl = this.ttlFor("pending");
    const now = this.deps.clock.now();
    // Anything scored before this is past every TTL it could have had (waiting, running, kept).
    const horizon = 2 * ttl + Math.max(this.ttlFor("completed"), this.ttlFor("failed"));
    const keys = [jobKeys.record(job.id), jobKeys.tombstone(job.id), jobKeys.queue(job.model)];
    if (job.consumer_name !== undefined) keys.push(jobKeys.consumerIndex(job.consumer_name));
    const tombstone = JSON.stringify({ service_type: job.service_type, consumer: job.consumer_name ?? "" });
    const fields = Object.entries(toHash(job)).flat();
    const created = await this.kv.run(jobCreate, keys, [
      job.id,
      ttl,
      ttl + this.markerTtl(),
      tombstone,
      job.priority ? "head" : "tail",
      Date.parse(job.created_at) || now,
      now - horizon,
      ...fields,
    ]);
    if (created !== 1) throw new Error(`job id ${job.id} is already taken`);
  }

  async get(id: string): Promise<JobRecord | null> {
    return fromHash(await this.kv.hgetall(jobKeys.record(id)));
  }

  async lookup(id: string): Promise<JobLookup> {
    const job = await this.get(id);
    if (job) return { found: "record", job };
    const marker = await this.kv.get(jobKeys.tombstone(id));
    if (marker === null) return { found: "none" };
    let parsed: { service_type?: unknown; consumer?: unknown } = {};
    try {
      parsed = JSON.parse(marker) as typeof parsed;
    } catch {
      // A foreign value still marks an expired job; ownership then cannot be checked.
    }
    const consumer = typeof parsed.consumer === "string" && parsed.consumer !== "" ? parsed.consumer : undefined;
    return { found: "tombstone", serviceType: typeof parsed.service_type === "string" ? parsed.service_type : "", consumer };
  }

  async transition(job: JobRecord, from: readonly JobStatus[], to: JobStatus, fields: FinishFields = {}): Promise<Transition> {
    const ttl = this.ttlFor(to);
    const reply = await this.kv.run(jobTransition, this.recordKeys(job), [
      from.join(","),
      to,
      ttl,
      ttl + this.markerTtl(),
      ...Object.entries(this.changeFields(to, fields)).flat(),
    ]);
    return { applied: reply[0] === 1, previous: reply[1] as Transition["previous"] };
  }

  async cancel(job: JobRecord): Promise<{ status: JobStatus; job?: JobRecord } | null> {
    const ttl = this.ttlFor("cancelled");
    const keys = [
      jobKeys.record(job.id),
      jobKeys.tombstone(job.id),
      jobKeys.queue(job.model),
      jobKeys.cancel(job.id),
      jobKeys.notifyOutbox,
      jobKeys.retry(job.model),
    ];
    if (job.consumer_name !== undefined) keys.push(jobKeys.consumerIndex(job.consumer_name));
    const [after, before] = await this.kv.run(jobCancel, keys, [
      job.id,
      ttl,
      ttl + this.markerTtl(),
      this.ttlFor("processing"),
      this.notifyAfter(),
      ...Object.entries(this.changeFields("cancelled", {})).flat(),
    ]);
    if (after === "") return null;
    if (after === "cancelled" && before === "pending") {
      // It will never run: its input is not needed any more.
      await this.deleteObject(job.input_key);
      return { status: "cancelled", job: (await this.get(job.id)) ?? { ...job, status: "cancelled" } };
    }
    return { status: after as JobStatus };
  }

  async cancelRequested(id: string): Promise<boolean> {
    return await this.kv.exists(jobKeys.cancel(id));
  }

  async readResult(job: JobRecord): Promise<unknown> {
    if (!job.result_key) return undefined;
    const stored = await this.objects.get(job.result_key);
    if (!stored) return undefined;
    const text = await new Response(stored.body).text();
    return JSON.parse(text) as unknown;
  }

  async consume(job: JobRecord): Promise<boolean> {
    // DEL answers 1 to exactly one caller: the first consumer wins, the others see it gone.
    if ((await this.kv.del(jobKeys.record(job.id))) !== 1) return false;
    await this.forget(job);
    return true;
  }

  async list(query: JobListQuery): Promise<JobPage> {
    const index = jobKeys.consumerIndex(query.consumer);
    const ids = (await this.kv.zrangeByScore(index, -Infinity, Infinity)).reverse();
    const matching: JobRecord[] = [];
    for (let at = 0; at < ids.length; at += BATCH) {
      const batch = ids.slice(at, at + BATCH);
      const records = await Promise.all(batch.map((id) => this.get(id)));
      for (const [i, job] of records.entries()) {
        if (!job) {
          // Expired or consumed: prune the index as we go.
          await this.kv.zrem(index, batch[i]);
          continue;
        }
        if (query.serviceType !== undefined && job.service_type !== query.serviceType) continue;
        if (query.status !== undefined && job.status !== query.status) continue;
        matching.push(job);
      }
    }
    // The index is ordered by created_at ms; equal milliseconds are ordered by id, so sort for a stable newest-first page.
    matching.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1));
    return { total: matching.length, jobs: matching.slice(query.offset, query.offset + query.limit) };
  }

  async purge(model: string): Promise<number> {
    let deleted = 0;
    let cursor = "0";
    do {
      const page = await this.kv.scan(jobKeys.recordPrefix, cursor, SCAN_COUNT);
      cursor = page.cursor;
      const ids = page.keys.map((key) => jobKeys.idOfRecordKey(key)).filter((id): id is string => id !== undefined);
      for (let at = 0; at < ids.length; at += BATCH) {
        const jobs = await Promise.all(ids.slice(at, at + BATCH).map((id) => this.get(id)));
        for (const job of jobs) {
          if (!job || job.model !== model) continue;
          if (job.status === "processing") {
            // Stop the relay's backend call; its finish then finds the record gone.
            await this.kv.set(jobKeys.cancel(job.id), "1", this.ttlFor("processing"));
          }
          if ((await this.kv.del(jobKeys.record(job.id))) === 1) deleted++;
          await this.kv.del(jobKeys.tombstone(job.id));
          await this.kv.lrem(jobKeys.queue(job.model), 0, job.id);
          await this.kv.zrem(jobKeys.retry(job.model), job.id);
          await this.forget(job);
        }
      }
    } while (cursor !== "0");
    return deleted;
  }

  async claim(model: string, leaseMs: number): Promise<ClaimedJob | null> {
    return (await this.claimFirst([model], 0, leaseMs))?.claim ?? null;
  }

  async claimFirst(models: readonly string[], from: number, leaseMs: number): Promise<{ claim: ClaimedJob; index: number } | null> {
    if (models.length === 0) return null;
    const token = this.deps.ids.newId();
    const found = await this.kv.run(
      relayClaim,
      models.flatMap((model) => [jobKeys.queue(model), jobKeys.processing(model), jobKeys.retry(model)]),
      [jobKeys.leasePrefix, token, leaseMs, this.deps.clock.now(), from % models.length],
    );
    if (found === null) return null;
    const [index, id] = found;
    return { claim: { id, model: models[index], token }, index };
  }

  async renewLease(claim: ClaimedJob, leaseMs: number, consumer?: string): Promise<boolean> {
    // The record lives while the lease does, and then the pending TTL more: if the relay dies,
    // the GC reaper (which acts once the lease lapsed) still finds a record to requeue.
    const ttl = leaseMs + this.ttlFor("processing");
    const keys = [jobKeys.lease(claim.id), jobKeys.record(claim.id), jobKeys.tombstone(claim.id)];
    if (consumer !== undefined) keys.push(jobKeys.consumerIndex(consumer));
    return (await this.kv.run(leaseRenew, keys, [claim.token, leaseMs, ttl, ttl + this.markerTtl()])) === 1;
  }

  async finish(claim: ClaimedJob, job: JobRecord, to: "completed" | "failed" | "cancelled", fields: FinishFields = {}): Promise<Transition> {
    const ttl = this.ttlFor(to);
    const keys = [
      jobKeys.record(job.id),
      jobKeys.tombstone(job.id),
      jobKeys.processing(claim.model),
      jobKeys.lease(job.id),
      jobKeys.cancel(job.id),
      jobKeys.notifyOutbox,
    ];
    if (job.consumer_name !== undefined) keys.push(jobKeys.consumerIndex(job.consumer_name));
    const reply = await this.kv.run(jobFinish, keys, [
      job.id,
      claim.token,
      "pending,processing",
      to,
      ttl,
      ttl + this.markerTtl(),
      this.notifyAfter(),
      ...Object.entries(this.changeFields(to, fields)).flat(),
    ]);
    const outcome: Transition = { applied: reply[0] === 1, previous: reply[1] as Transition["previous"] };
    if (outcome.previous !== "leased") await this.deleteObject(job.input_key);
    return outcome;
  }

  async retryLater(claim: ClaimedJob, job: JobRecord, dueAt: number): Promise<"scheduled" | "cancel" | "leased" | "dropped"> {
    // Pending again: the pending TTL, counted from when the job may run again.
    const ttl = Math.max(0, dueAt - this.deps.clock.now()) + this.ttlFor("pending");
    const keys = [
      jobKeys.record(job.id),
      jobKeys.tombstone(job.id),
      jobKeys.processing(claim.model),
      jobKeys.lease(job.id),
      jobKeys.cancel(job.id),
      jobKeys.retry(claim.model),
    ];
    if (job.consumer_name !== undefined) keys.push(jobKeys.consumerIndex(job.consumer_name));
    const reply = await this.kv.run(jobRetry, keys, [
      job.id,
      claim.token,
      dueAt,
      ttl,
      ttl + this.markerTtl(),
      ...Object.entries(this.changeFields("pending", {})).flat(),
    ]);
    return reply as "scheduled" | "cancel" | "leased" | "dropped";
  }

  async release(claim: ClaimedJob): Promise<"requeued" | "cancel" | "dropped"> {
    const reply = await this.kv.run(
      jobRelease,
      [jobKeys.record(claim.id), jobKeys.processing(claim.model), jobKeys.queue(claim.model), jobKeys.lease(claim.id), jobKeys.cancel(claim.id)],
      [claim.id, claim.token],
    );
    return reply === 1 ? "requeued" : reply === 2 ? "cancel" : "dropped";
  }

  async drop(claim: ClaimedJob): Promise<void> {
    await this.kv.lrem(jobKeys.processing(claim.model), 0, claim.id);
    await this.kv.run(compareAndDelete, [jobKeys.lease(claim.id)], [claim.token]);
  }

  async queueDepth(): Promise<number> {
    // Jobs waiting for a retry are pending too.
    const lengths = await Promise.all(
      this.queueModels().flatMap((model) => [this.kv.llen(jobKeys.queue(model)), this.kv.zcard(jobKeys.retry(model))]),
    );
    return lengths.reduce((sum, n) => sum + n, 0);
  }

  markerTtl(): number {
    return markerTtlMs(this.deps.jobs);
  }

  /** The notification outbox score of a job ending now: when the webhooks sweep may take it. */
  private notifyAfter(): number {
    return this.deps.clock.now() + NOTIFY_GRACE_MS;
  }

  private recordKeys(job: JobRecord): string[] {
    const keys = [jobKeys.record(job.id), jobKeys.tombstone(job.id)];
    if (job.consumer_name !== undefined) keys.push(jobKeys.consumerIndex(job.consumer_name));
    return keys;
  }

  /** The fields every status change writes besides the status. */
  private changeFields(to: JobStatus, fields: FinishFields): Record<string, string> {
    const now = new Date(this.deps.clock.now()).toISOString();
    const out: Record<string, string> = { updated_at: now };
    if (to === "processing") out.started_at = now;
    if (to === "completed" || to === "failed" || to === "cancelled") out.completed_at = now;
    if (fields.result_key !== undefined) out.result_key = fields.result_key;
    if (fields.error !== undefined) out.error = fields.error;
    if (fields.attempts !== undefined) out.attempts = String(fields.attempts);
    return out;
  }

  /** After the record is gone: its index entry and its files. */
  private async forget(job: JobRecord): Promise<void> {
    if (job.consumer_name !== undefined) await this.kv.zrem(jobKeys.consumerIndex(job.consumer_name), job.id);
    await Promise.all([this.deleteObject(job.input_key), this.deleteObject(job.result_key)]);
  }

  /** Best effort: a file left behind is an orphan the GC removes, not a failed request. */
  private async deleteObject(key: string | undefined): Promise<void> {
    if (!key) return;
    try {
      await this.objects.delete(key);
    } catch (error) {
      this.deps.log.warn("job_object_delete_failed", { key, error });
    }
  }
}
