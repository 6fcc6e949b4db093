/**
 * The job record between its three shapes: the KV hash (all strings), the typed
 * `JobRecord`, and the API view (docs/design.md#job-record).
 */
import { JOB_STATUSES, type JobRecord, type JobStatus } from "../../core/jobs/types.ts";

export function isJobStatus(value: string): value is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(value);
}

/** Flat name/value pairs for HSET; absent optional fields are left out. */
export function toHash(job: JobRecord): Record<string, string> {
  const hash: Record<string, string> = {};
  for (const [name, value] of Object.entries(job)) {
    if (value === undefined) continue;
    hash[name] = typeof value === "boolean" ? (value ? "1" : "0") : String(value);
  }
  return hash;
}

/** The typed record, or null for a missing (empty) or foreign hash. */
export function fromHash(hash: Record<string, string>): JobRecord | null {
  if (!hash.id || !hash.status || !isJobStatus(hash.status)) return null;
  const optional = (name: string) => (hash[name] === undefined || hash[name] === "" ? undefined : hash[name]);
  return {
    id: hash.id,
    status: hash.status,
    service_type: hash.service_type ?? "",
    model: hash.model ?? "",
    created_at: hash.created_at ?? "",
    updated_at: hash.updated_at ?? hash.created_at ?? "",
    consumer_name: optional("consumer_name"),
    user_type: optional("user_type"),
    api_key_id: optional("api_key_id"),
    api_key_cost_period_ms: optional("api_key_cost_period_ms") === undefined ? undefined : Number(hash.api_key_cost_period_ms),
    priority: hash.priority === "1",
    callback_url: optional("callback_url"),
    operation: hash.operation ?? "",
    path: hash.path ?? "",
    input_key: hash.input_key ?? "",
    filename: hash.filename ?? "",
    content_type: hash.content_type ?? "",
    size: Number(hash.size ?? 0),
    result_key: optional("result_key"),
    error: optional("error"),
    started_at: optional("started_at"),
    completed_at: optional("completed_at"),
    traceparent: optional("traceparent"),
    attempts: Number(hash.attempts ?? 0) || 0,
  };
}

/**
 * What the API shows of a job (docs/design.md#job-record): `result` only when completed, `error`
 * only when failed; `attempts` (not in the spec) always, for services[].retry.
 */
export interface JobView {
  id: string;
  status: JobStatus;
  service_type: string;
  model: string;
  created_at: string;
  consumer_name?: string;
  priority: boolean;
  /** Attempts started so far (0 while the job never ran). */
  attempts: number;
  result?: unknown;
  error?: string;
}

export function toView(job: JobRecord, result?: unknown): JobView {
  const view: JobView = {
    id: job.id,
    status: job.status,
    service_type: job.service_type,
    model: job.model,
    created_at: job.created_at,
    priority: job.priority,
    attempts: job.attempts ?? 0,
  };
  if (job.consumer_name !== undefined) view.consumer_name = job.consumer_name;
  if (job.status === "completed" && result !== undefined) view.result = result;
  if (job.status === "failed") view.error = job.error ?? "";
  return view;
}
