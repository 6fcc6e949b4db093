/**
 * A batch created with `callback_url` is notified when it ends, through the webhooks plugin
 * (the jobs' signing, durable retries and dead letters):
 * `{"id":"evt_...","type":"batch.completed"|"batch.failed"|"batch.expired"|"batch.cancelled","created_at","data":{"id":"batch_..."}}`.
 */
import type { PluginApi } from "../../core/plugins/types.ts";
import type { BatchRecord } from "./batches/record.ts";

export function batchEventBody(batch: BatchRecord, eventId: string, nowMs: number): string {
  return JSON.stringify({ id: eventId, type: `batch.${batch.status}`, created_at: Math.floor(nowMs / 1000), data: { id: batch.id } });
}

/** Sends the notification of a batch that just ended here, when it has a callback URL. */
export function notifyEnded(api: PluginApi, batch: BatchRecord): void {
  if (!batch.callback_url || !api.has("webhooks")) return;
  const eventId = `evt_${api.ids.newId().replace(/-/g, "")}`;
  void api.use("webhooks").notify({
    id: batch.id,
    kind: "batch",
    status: `batch.${batch.status}`,
    url: batch.callback_url,
    body: batchEventBody(batch, eventId, api.clock.now()),
  });
}
