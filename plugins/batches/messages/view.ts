/**
 * A batch as the Message Batches API shows it: `processing_status` (`in_progress`, `canceling`,
 * `ended`), `request_counts {processing, succeeded, errored, canceled, expired}`, RFC 3339 times,
 * and `results_url` once it ended: an absolute URL of the gateway itself, which the SDK fetches.
 */
import { type BatchRecord, ENDED, remainingOf } from "../batches/record.ts";

const iso = (seconds: number | undefined): string | null => (seconds === undefined ? null : new Date(seconds * 1000).toISOString());

export function processingStatus(batch: BatchRecord): "in_progress" | "canceling" | "ended" {
  if (ENDED.includes(batch.status)) return "ended";
  return batch.status === "cancelling" ? "canceling" : "in_progress";
}

/** `origin`: the gateway's own address as the client reached it (results-url.ts). */
export function messageBatchView(batch: BatchRecord, origin: string): Record<string, unknown> {
  const status = processingStatus(batch);
  const ended = status === "ended";
  const left = remainingOf(batch);
  const endedAt = batch.completed_at ?? batch.expired_at ?? batch.cancelled_at ?? batch.failed_at;
  return {
    id: batch.id,
    type: "message_batch",
    processing_status: status,
    request_counts: {
      processing: ended ? 0 : left,
      succeeded: batch.completed,
      errored: batch.failed,
      canceled: ended && batch.status === "cancelled" ? left : 0,
      expired: ended && batch.status === "expired" ? left : 0,
    },
    ended_at: ended ? iso(endedAt) : null,
    created_at: iso(batch.created_at),
    expires_at: iso(batch.expires_at),
    archived_at: null,
    cancel_initiated_at: iso(batch.cancelling_at),
    results_url: ended && batch.has_output ? `${origin}/v1/messages/batches/${batch.id}/results` : null,
  };
}
