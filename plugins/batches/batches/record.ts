/**
 * A batch as stored (a KV hash of strings, `batch:rec:<id>`) and as the OpenAI API shows it.
 * One engine serves both batch APIs: `api` says which one created the batch, and so the shape
 * of its lines, its results and its answers.
 */
import type { Principal } from "../../../core/pipeline/context.ts";

export type BatchApi = "openai" | "anthropic";

export type BatchStatus = "validating" | "in_progress" | "finalizing" | "completed" | "failed" | "expired" | "cancelling" | "cancelled";

/** How a batch that is being finalized ends. */
export type BatchEnding = "completed" | "expired" | "cancelled";

export const ENDED: readonly BatchStatus[] = ["completed", "failed", "expired", "cancelled"];

/** One problem found in the input file (the first 100 are kept). */
export interface LineError {
  code: string;
  message: string;
  /** 1-based line of the input file; null for a problem of the whole file. */
  line: number | null;
}

export interface BatchRecord {
  id: string;
  api: BatchApi;
  /** The consumer that owns it ("" for an anonymous caller). */
  owner: string;
  /** Who the lines run as: the creator's principal when the batch was created. */
  principal: Principal;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  /** How the batch ends once finalized (set when finalizing starts, or on cancel). */
  ending?: BatchEnding;
  created_at: number;
  in_progress_at?: number;
  /** Unix seconds; `expires_ms` is the same instant in ms, which the line claim compares. */
  expires_at: number;
  expires_ms: number;
  finalizing_at?: number;
  completed_at?: number;
  failed_at?: number;
  expired_at?: number;
  cancelling_at?: number;
  cancelled_at?: number;
  total: number;
  completed: number;
  failed: number;
  in_flight: number;
  errors?: LineError[];
  metadata: Record<string, string> | null;
  callback_url?: string;
  /** Reserved at creation, shown once the batch has ended with such a file. */
  output_file_id: string;
  error_file_id: string;
  has_output?: boolean;
  has_errors?: boolean;
  /** The first line of each chunk of checked lines (batches/<id>/lines/<n>). */
  chunks: number[];
  /** Lines put in their models' queues so far (validation resumes from here after a crash). */
  enqueued: number;
}

const NUMBER_FIELDS = [
  "created_at",
  "in_progress_at",
  "expires_at",
  "expires_ms",
  "finalizing_at",
  "completed_at",
  "failed_at",
  "expired_at",
  "cancelling_at",
  "cancelled_at",
  "total",
  "completed",
  "failed",
  "in_flight",
  "enqueued",
] as const;
const JSON_FIELDS = ["principal", "errors", "metadata", "chunks"] as const;
const BOOLEAN_FIELDS = ["has_output", "has_errors"] as const;

/** The hash fields of (part of) a record. */
export function toFields(record: Partial<BatchRecord>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(record)) {
    if (value === undefined) continue;
    if ((JSON_FIELDS as readonly string[]).includes(name)) fields[name] = JSON.stringify(value);
    else fields[name] = String(value);
  }
  return fields;
}

export function fromFields(fields: Record<string, string>): BatchRecord | null {
  if (fields.id === undefined || fields.status === undefined) return null;
  const record: Record<string, unknown> = { ...fields };
  for (const name of NUMBER_FIELDS) if (fields[name] !== undefined) record[name] = Number(fields[name]);
  for (const name of JSON_FIELDS) if (fields[name] !== undefined) record[name] = JSON.parse(fields[name]);
  for (const name of BOOLEAN_FIELDS) if (fields[name] !== undefined) record[name] = fields[name] === "true";
  for (const name of ["completed", "failed", "in_flight", "total", "enqueued"] as const) record[name] ??= 0;
  record.chunks ??= [];
  record.metadata ??= null;
  return record as unknown as BatchRecord;
}

/** Lines not ended yet (neither succeeded nor failed). */
export const remainingOf = (batch: BatchRecord): number => batch.total - batch.completed - batch.failed;

/** The OpenAI Batch object. */
export function batchView(batch: BatchRecord): Record<string, unknown> {
  const ended = ENDED.includes(batch.status);
  return {
    id: batch.id,
    object: "batch",
    endpoint: batch.endpoint,
    errors: batch.errors && batch.errors.length > 0 ? { object: "list", data: batch.errors } : null,
    input_file_id: batch.input_file_id,
    completion_window: batch.completion_window,
    status: batch.status,
    output_file_id: ended && batch.has_output ? batch.output_file_id : null,
    error_file_id: ended && batch.has_errors ? batch.error_file_id : null,
    created_at: batch.created_at,
    in_progress_at: batch.in_progress_at ?? null,
    expires_at: batch.expires_at,
    finalizing_at: batch.finalizing_at ?? null,
    completed_at: batch.completed_at ?? null,
    failed_at: batch.failed_at ?? null,
    expired_at: batch.expired_at ?? null,
    cancelling_at: batch.cancelling_at ?? null,
    cancelled_at: batch.cancelled_at ?? null,
    request_counts: { total: batch.total, completed: batch.completed, failed: batch.failed },
    metadata: batch.metadata,
  };
}
