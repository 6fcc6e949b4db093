/**
 * A batch created with `callback_url` is notified when it ends, through the webhooks plugin
 * (the jobs' signing, durable retries and dead letters):
 * `{"id":"evt_...","type":"batch.completed"|"batch.failed"|"batch.expired"|"batch.cancelled","created_at","data":{"id":"batch_..."}}`.
 *
 * Durable from the end on: the step that ends such a batch also puts it in the notification
 * outbox (`batch:notify`, in the same atomic store operation), and it leaves the outbox once its
 * delivery is stored with the webhooks plugin (one delivery per batch id, so handing it over
 * twice sends it once). A process that dies between the two leaves it to the outbox sweep of
 * any gateway process, `OUTBOX_GRACE_MS` after the end.
 */
import type { PluginApi } from "../../core/plugins/types.ts";
import type { BatchRecord } from "./batches/record.ts";
import type { BatchStore } from "./batches/store.ts";

/** How long after its end an ended batch's webhook is left to the process that ended it. */
export const OUTBOX_GRACE_MS = 60_000;
/** How often every gateway process sweeps the outbox. */
export const OUTBOX_SWEEP_MS = 10_000;
const SWEPT_PER_TICK = 50;

export function batchEventBody(batch: BatchRecord, eventId: string, nowMs: number): string {
  return JSON.stringify({ id: eventId, type: `batch.${batch.status}`, created_at: Math.floor(nowMs / 1000), data: { id: batch.id } });
}

/** Hands the notification of a batch that ended to the webhooks plugin, then takes it off the outbox. */
export async function notifyEnded(api: PluginApi, store: BatchStore, batch: BatchRecord): Promise<void> {
  if (!batch.callback_url) return;
  // Webhooks turned off since the batch was created: nothing will ever send it.
  if (!api.has("webhooks")) return await store.notified(batch.id);
  const eventId = `evt_${api.ids.newId().replace(/-/g, "")}`;
  await api.use("webhooks").notify({
    id: batch.id,
    kind: "batch",
    status: `batch.${batch.status}`,
    url: batch.callback_url,
    body: batchEventBody(batch, eventId, api.clock.now()),
  });
  await store.notified(batch.id);
}

/** The outbox sweep: the webhooks of batches that ended over the grace period ago and were never handed over. */
export async function sweepOutbox(api: PluginApi, store: BatchStore): Promise<void> {
  const ids = await store.unnotified(api.clock.now() - OUTBOX_GRACE_MS, SWEPT_PER_TICK);
  for (const id of ids) {
    const batch = await store.get(id);
    if (batch) await notifyEnded(api, store, batch);
    else await store.notified(id);
  }
}
