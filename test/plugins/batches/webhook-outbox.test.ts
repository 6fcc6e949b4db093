/**
 * A batch's webhook survives the death of the process that ended it: the step that ends a batch
 * with a callback_url puts it in the notification outbox in the same atomic store operation, and
 * the outbox sweep of any process hands it to the webhooks plugin once the grace period passed.
 * The test ends a batch as a process would (the store's own end step) and never notifies, as a
 * process killed right after it; then drives the sweep on the manual clock. Memory and Redis.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { BatchStore } from "../../../plugins/batches/batches/store.ts";
import { batchKeys } from "../../../plugins/batches/keys.ts";
import { OUTBOX_GRACE_MS } from "../../../plugins/batches/webhook.ts";
import { batchRuntime, chatLine, createBatch, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let receiver: Server;
let receiverUrl = "";
const deliveries: Array<{ body: Record<string, unknown> }> = [];
beforeAll(async () => {
  receiver = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      deliveries.push({ body: JSON.parse(text) as Record<string, unknown> });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const config = `
batches:
  enabled: true
webhooks:
  allow_private_networks: true
  signing_secret: outbox-secret
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: http://127.0.0.1:9
    operations:
      chat: [/v1/chat/completions]
`;

describe.each(STORES)("the batch webhook outbox on the %s store", (store) => {
  it("sends the webhook of a batch whose process died right after ending it, once", async () => {
    deliveries.length = 0;
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const gw = await batchRuntime(config, { store, redisUrl, clock });
    try {
      const created = await createBatch(gw, [chatLine("a", "hi")], { body: { callback_url: receiverUrl } });
      const id = created.id as string;
      // The process that ends it dies before handing the webhook over: only the store's step runs.
      const batches = new BatchStore(gw.kv);
      expect(await batches.end(id, ["validating", "in_progress"], "cancelled", 3_600_000, { cancelled_at: 1 }, clock.now())).toBe(true);
      expect(await gw.kv.zcard(batchKeys.notify)).toBe(1);

      // Within the grace period the sweep leaves it to the process that ended it.
      await gw.runtime.runTaskNow("batches.notify");
      expect(deliveries).toHaveLength(0);

      clock.advance(OUTBOX_GRACE_MS + 1);
      await gw.runtime.runTaskNow("batches.notify");
      const deadline = Date.now() + 5_000;
      while (deliveries.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(deliveries.map((d) => d.body)).toEqual([expect.objectContaining({ type: "batch.cancelled", data: { id } })]);
      expect(await gw.kv.zcard(batchKeys.notify)).toBe(0);

      // Handed over once: another sweep sends nothing more.
      await gw.runtime.runTaskNow("batches.notify");
      expect(deliveries).toHaveLength(1);
    } finally {
      await gw.close();
    }
  });
});
