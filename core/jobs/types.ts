/**
 * The async jobs contract other plugins rely on: the job record, the `jobs` service (job
 * store + queues, used by the relay, webhooks, idempotency and GC plugins) and the events
 * of a job's life. Declared into the core's `GatewayServices` / `GatewayEvents` by
 * declaration merging, so `api.use("jobs")` and `api.on("job.terminal", ...)` are typed.
 */
import type { ServiceConfig } from "../config/schema.ts";
import type { RequestContext } from "../pipeline/context.ts";
import type { JobKeys } from "./keys.ts";

export type JobStatus = "pending" | "processing" | "completed" | "failed" | "cancelled";

export const JOB_STATUSES: readonly JobStatus[] = ["pending", "processing", "completed", "failed", "cancelled"];

export const TERMINAL_STATUSES: readonly JobStatus[] = ["completed", "failed", "cancelled"];

/**
 * A stored job (a KV hash, see keys.ts). Field names are the wire names (docs/design.md#job-record)
 * so the record, the API view and the logs say the same thing.
 */
export interface JobRecord {
  id: string;
  status: JobStatus;
  service_type: string;
  /** The model alias (the service type for a service without one; see `jobModelOf`). */
  model: string;
  /** ISO 8601. */
  created_at: string;
  /** ISO 8601, the last status change. */
  updated_at: string;
  /** The caller's consumer name, when consumer identification is on and the header was sent. */
  consumer_name?: string;
  /** The caller's user type (server.user_type_header or the auth mode), for per-user-type budgets. */
  user_type?: string;
  /** The id of the API key the job was submitted with (usage reports by key). */
  api_key_id?: string;
  /**
   * That key's cost budget window (`limits.cost_period`, ms) when it had a `cost_rate` at
   * submission: the process that runs the job counts its cost against the key's budget.
   */
  api_key_cost_period_ms?: number;
  /** Submitted with `server.priority_header`: queued at the head. */
  priority: boolean;
  callback_url?: string;
  /** The operation name ("" when the model has no operations) and its first path. */
  operation: string;
  path: string;
  /** Object-store key of the uploaded file. */
  input_key: string;
  /** The upload's file name and content type, passed on to the backend. */
  filename: string;
  content_type: string;
  /** Upload size in bytes. */
  size: number;
  /** Object-store key of the result (completed jobs). */
  result_key?: string;
  /** Why the job failed (failed jobs). */
  error?: string;
  started_at?: string;
  completed_at?: string;
  /**
   * Attempts started (a relay took the job to processing), retries included; absent or 0
   * while it never ran. Compared with services[].retry.max_attempts.
   */
  attempts?: number;
  /**
   * The W3C traceparent of the submitting request's span when tracing is on: the relay runs
   * the job in that trace. Records saved before this field existed have none.
   */
  traceparent?: string;
}

/**
 * The submission answer (docs/design.md#job-submission); also the body an idempotent replay
 * repeats.
 */
export interface JobAccepted {
  job_id: string;
  service_type: string;
  model: string;
  status: "pending";
}

/** What `GET /jobs/{type}/{id}` finds. */
export type JobLookup =
  | { found: "record"; job: JobRecord }
  /** The record's TTL passed and the tombstone still lives (410). */
  | { found: "tombstone"; serviceType: string; consumer?: string }
  | { found: "none" };

export interface JobListQuery {
  consumer: string;
  serviceType?: string;
  status?: JobStatus;
  limit: number;
  offset: number;
}

export interface JobPage {
  total: number;
  jobs: JobRecord[];
}

/** The outcome of an atomic status change. */
export interface Transition {
  applied: boolean;
  /**
   * The status found before the change: "" when the record is gone, "leased" when another
   * relay holds the job's lease (finish only).
   */
  previous: JobStatus | "" | "leased";
}

/**
 * Steps other plugins add to `POST /jobs/{type}` (idempotency, concurrency slots). They run
 * inside the submission, so they see the final job id and can answer instead of it.
 */
export interface SubmissionHook {
  name: string;
  /** Before the body is read. An answer ends the request and nothing is stored. */
  beforeUpload?(ctx: RequestContext): Promise<Response | undefined> | Response | undefined;
  /**
   * After the upload and every pipeline stage, just before the record is saved, with the
   * final job id. An answer ends the request; the uploaded file is then deleted.
   */
  beforeSave?(ctx: RequestContext, accepted: JobAccepted): Promise<Response | undefined> | Response | undefined;
  /** The record is saved and queued; the 202 follows. Errors are logged, never answered. */
  afterSave?(ctx: RequestContext, job: JobRecord): Promise<void> | void;
}

/** A job handed to a relay by `claim`. */
export interface ClaimedJob {
  id: string;
  model: string;
  /** The lease holder's token: renew, finish and release only work while it holds the lease. */
  token: string;
}

export interface FinishFields {
  result_key?: string;
  error?: string;
  /** The attempt count to store (set when an attempt starts). */
  attempts?: number;
}

/** The job store and queues: the one owner of the KV layout (keys.ts) and its atomic ops. */
export interface JobStore {
  readonly keys: JobKeys;
  /** Record TTL in ms for a status (lifecycle.job_ttl, `global` fallback, 2 h safety net). */
  ttlFor(status: JobStatus): number;
  /** `lifecycle.persists_result`: a completed job's result is kept until its TTL; false = `consume` deletes it on first read or delivery. */
  readonly persistsResult: boolean;
  /** How long a tombstone outlives its record, in ms (jobs.expired_marker_ttl). */
  markerTtl(): number;
  /** The model name a service's jobs carry and queue under. */
  modelOf(service: ServiceConfig): string;
  /** The configured service a job belongs to (undefined when it was removed from the config). */
  serviceOf(job: Pick<JobRecord, "service_type" | "model">): ServiceConfig | undefined;
  /** Every queue model name of the current config. */
  queueModels(): string[];

  /** Saves the record, its tombstone and consumer index entry, and queues it, atomically. */
  create(job: JobRecord): Promise<void>;
  get(id: string): Promise<JobRecord | null>;
  lookup(id: string): Promise<JobLookup>;
  /** Atomic status change from one of `from`; the record TTL follows the new status. */
  transition(job: JobRecord, from: readonly JobStatus[], to: JobStatus, fields?: FinishFields): Promise<Transition>;
  /**
   * DELETE semantics (docs/design.md#cancelling-a-job): pending -> cancelled and unqueued;
   * processing -> cancel signal. Null when gone.
   */
  cancel(job: JobRecord): Promise<{ status: JobStatus; job?: JobRecord } | null>;
  cancelRequested(id: string): Promise<boolean>;
  /** The stored result of a completed job (parsed JSON); undefined when the object is gone. */
  readResult(job: JobRecord): Promise<unknown>;
  /**
   * `persists_result=false` consumption: deletes the record, its index entry and its files.
   * True for exactly one caller (the first consumer wins).
   */
  consume(job: JobRecord): Promise<boolean>;
  list(query: JobListQuery): Promise<JobPage>;
  /** Deletes every record and file of a model, in bounded batches. Resolves with the records deleted. */
  purge(model: string): Promise<number>;

  /** Reliable queue: moves the next id of `relay:<model>` to its processing list with a lease. */
  claim(model: string, leaseMs: number): Promise<ClaimedJob | null>;
  /**
   * The same over several models in one store round trip: the first job of `models`, looked
   * for from `models[from]` on round the list, with the index of the model that gave it.
   */
  claimFirst(models: readonly string[], from: number, leaseMs: number): Promise<{ claim: ClaimedJob; index: number } | null>;
  /**
   * Renews the lease and keeps a processing job's record (tombstone, index entry of
   * `consumer`) alive for the lease plus the pending TTL, in one atomic step. False when the
   * lease is held by someone else now (the job was reclaimed).
   */
  renewLease(claim: ClaimedJob, leaseMs: number, consumer?: string): Promise<boolean>;
  /**
   * Terminal update + processing-list, lease and cancel-signal cleanup, atomically; the
   * input file is deleted once the job is terminal. Refused ("leased") when another relay
   * holds the lease.
   */
  finish(claim: ClaimedJob, job: JobRecord, to: "completed" | "failed" | "cancelled", fields?: FinishFields): Promise<Transition>;
  /**
   * Ends a claim whose attempt failed transiently: the job is pending again and waits in
   * `relay-retry:<model>` until `dueAt` (ms), when a claim moves it to its queue head.
   * "cancel" when DELETE asked to stop it (nothing changed; the caller finishes it as
   * cancelled); "leased" when another relay holds the lease; "dropped" when the record is
   * gone or no longer processing (the claim is ended, nothing scheduled).
   */
  retryLater(claim: ClaimedJob, job: JobRecord, dueAt: number): Promise<"scheduled" | "cancel" | "leased" | "dropped">;
  /**
   * Gives a claimed job back when the relay stops: "requeued" to the queue head when it was
   * waiting or running; "cancel" when DELETE asked to stop it (the caller finishes it as
   * cancelled); "dropped" when it is finished, gone or leased by another relay.
   */
  release(claim: ClaimedJob): Promise<"requeued" | "cancel" | "dropped">;
  /** Drops a claim whose job will not run (cancelled or gone before it started). */
  drop(claim: ClaimedJob): Promise<void>;
  /** Pending jobs over every queue, those waiting for a retry included (svc_relay_queue_depth). */
  queueDepth(): Promise<number>;

  addSubmissionHook(hook: SubmissionHook): void;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    jobs: JobStore;
  }
  interface GatewayEvents {
    /** A job was saved and queued (not emitted for idempotent replays). */
    "job.submitted": { job: JobRecord };
    /**
     * A job reached `completed`, `failed` or `cancelled`. `result` is the parsed result of a
     * completed job when the emitter has it at hand (the relay does); else read it with
     * `jobs.readResult(job)`. Emitted in the process that made the change (gateway or relay).
     */
    "job.terminal": { job: JobRecord; result?: unknown };
    /**
     * A relay finished calling the backend for a job: inference seconds for the
     * processing-time budget (docs/design.md#processing-time). Emitted in the relay's process.
     */
    "relay.processed": {
      consumer?: string;
      userType?: string;
      serviceType: string;
      model: string;
      seconds: number;
      /** What the processing cost in `pricing.currency` (`per_second`); absent when unpriced. */
      cost?: number;
      /** The job's API key (`api_key_id`), and its cost budget window when it has one. */
      keyId?: string;
      keyCostPeriodMs?: number;
    };
    /**
     * An unfinished job's record was given a longer life: it now expires at `expiresAt` (ms,
     * at the latest). Emitted when a relay starts the job or renews its lease (in the relay's
     * process) and when the GC reaper requeues it. The limits plugin keeps the job's
     * concurrent-job slot that long (docs/design.md#concurrent-jobs).
     */
    "job.expiry": { job: JobRecord; expiresAt: number };
  }
}
