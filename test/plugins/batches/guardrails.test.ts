/**
 * Batch lines go through the guardrails as a direct request of their owner does: a line a rule
 * blocks is a failed line whose error file entry carries the refusal (status 400, type and code
 * `guardrail_blocked` with the rule's name) and reaches no backend, and counts in its owner's
 * usage under `outcomes` (the report's `mode: batch` group too), not as a served request; a line
 * a rule masks reaches the backend masked. In-process on the memory store and on Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { metricValue } from "../../support/prometheus.ts";
import { batchRuntime, chatLine, createBatch, drive, fileLines, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
const NOW = Date.UTC(2026, 5, 1, 12);
const DAY = "2026-06-01";
let llm: FakeBackend;
beforeAll(async () => {
  llm = await startLlmBackend();
});
afterAll(async () => {
  await llm.stop();
});

const config = () => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  max_attempts: 1
guardrails:
  - name: no-secrets
    kind: pii
    on: [input]
    action: block
    entities: [secret]
  - name: emails
    kind: pii
    on: [input]
    action: mask
    entities: [email]
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${llm.url}
    operations:
      chat: [/v1/chat/completions]
`;

const alice = { "x-consumer": "alice" };

describe.each(STORES)("batch lines through the guardrails on the %s store", (store) => {
  it("a blocked line fails with the refusal, reaches no backend and counts under outcomes; a masked line reaches it masked", async () => {
    llm.received.length = 0;
    const gw = await batchRuntime(config(), { store, redisUrl, clock: new ManualClock(NOW) });
    try {
      const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
      const lines = [chatLine("masked", "write to ada@example.com"), chatLine("blocked", `my key is ${secret}`)];
      const id = (await createBatch(gw, lines, { headers: alice })).id as string;
      const get = async () => (await gw.json(`/v1/batches/${id}`, { headers: alice })).body;
      await drive(gw, async () => (await get()).status === "completed");
      const done = await get();
      expect(done.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });

      const sent = llm.calls("/v1/chat/completions").map((r) => JSON.stringify(r.body));
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain("write to [EMAIL]");
      expect(sent.join("")).not.toContain(secret);

      const failed = await fileLines(gw, done.error_file_id as string, alice);
      expect(failed).toEqual([
        expect.objectContaining({
          custom_id: "blocked",
          response: expect.objectContaining({
            status_code: 400,
            body: { error: expect.objectContaining({ type: "guardrail_blocked", code: "no-secrets" }) },
          }),
        }),
      ]);
      expect(JSON.stringify(failed)).not.toContain(secret);
      const metrics = await gw.metrics.text();
      expect(metricValue(metrics, "svc_guardrail_actions_total", { guardrail: "no-secrets", stage: "input", action: "block" })).toBe(1);
      expect(metricValue(metrics, "svc_guardrail_actions_total", { guardrail: "emails", stage: "input", action: "mask" })).toBe(1);

      // The owner's usage: the masked line served, the blocked one under outcomes.
      const usage = await gw.json("/usage", { headers: alice });
      expect(usage.body.usage).toEqual([
        { service_type: "chat", total: { requests: 1, tokens: { prompt: 11, completion: 7 }, outcomes: { guardrail_blocked: 1 } } },
      ]);
      const report = await gw.json(`/-/usage/report?type=chat&period=daily&from=${DAY}&to=${DAY}&total=true&group_by=mode`);
      expect(report.body.total).toMatchObject({ requests: 1, outcomes: { guardrail_blocked: 1 } });
      expect(report.body.groups).toEqual([{ key: "batch", requests: 1, tokens: 18, cost: 0, outcomes: { guardrail_blocked: 1 } }]);
    } finally {
      await gw.close();
    }
  });
});
