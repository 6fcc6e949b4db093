/**
 * What a batch line counts for, in-process on the memory store and on Redis: its usage and cost
 * go to its owner like a request's, at `pricing.batch_multiplier` times the price, and the usage
 * report tells batch lines from interactive requests (`group_by=mode`); the request rate does
 * not apply per line (token and dollar budgets do: lifecycle.test.ts); a line yields the sync
 * concurrency cap's slots to interactive traffic (it starts only while half the shared slots
 * are free) without spending an attempt; the batch metrics count batches and lines.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { type HeldBackend, startHeldBackend } from "../../fixtures/held-backend.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { metricValue } from "../../support/prometheus.ts";
import { type BatchRuntime, batchRuntime, chatLine, createBatch, drive, fileLines, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let llm: FakeBackend;
let held: HeldBackend;
beforeAll(async () => {
  [llm, held] = await Promise.all([startLlmBackend(), startHeldBackend()]);
});
afterAll(async () => {
  await Promise.all([llm.stop(), held.close()]);
});

const NOW = Date.UTC(2026, 5, 1, 12);
const DAY = "2026-06-01";

const config = () => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  concurrency: 4
  max_attempts: 1
pricing:
  batch_multiplier: 0.5
  models:
    chat-small: { input: 2, output: 8 }
rate_limits:
  chat:
    "*": { rate: 1, period: 1h }
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${llm.url}
    operations:
      chat: [/v1/chat/completions]
  - type: capped
    model: capped
    provider: chat_completions
    inference_url: ${held.url}
    max_concurrent_sync: 2
    operations:
      chat: [/v1/chat/completions]
`;

const alice = { "x-consumer": "alice" };

describe.each(STORES)("batch accounting on the %s store", (store) => {
  let gw: BatchRuntime;
  let clock: ManualClock;
  afterEach(async () => {
    await gw?.close();
    llm.received.length = 0;
  });
  const start = async () => {
    clock = new ManualClock(NOW);
    gw = await batchRuntime(config(), { store, redisUrl, clock });
  };
  const get = async (id: string) => (await gw.json(`/v1/batches/${id}`, { headers: alice })).body;

  it("counts lines for the owner at batch_multiplier, apart from interactive requests, and without the request rate", async () => {
    await start();
    const direct = await gw.request("/v1/chat/completions", {
      method: "POST",
      headers: { ...alice, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-small", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(direct.status).toBe(200);
    expect(direct.headers.get("x-gateway-cost")).toBe("0.000078");
    // The rate (1 an hour) is used up: a second direct request is refused, the batch's 3 lines all run.
    expect(
      (await gw.request("/v1/chat/completions", {
        method: "POST",
        headers: { ...alice, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-small", messages: [{ role: "user", content: "again" }] }),
      })).status,
    ).toBe(429);
    const id = (await createBatch(gw, ["a", "b", "c"].map((c) => chatLine(c, c)), { headers: alice })).id as string;
    await drive(gw, async () => (await get(id)).status === "completed");
    expect((await get(id)).request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const report = await gw.json(`/-/usage/report?type=chat&period=daily&from=${DAY}&to=${DAY}&total=true&group_by=mode`);
    expect(report.status).toBe(200);
    // 18 tokens an answer; 0.000078 direct, half of it per line (groups come most cost first).
    expect(report.body.groups).toEqual([
      { key: "batch", requests: 3, tokens: 54, cost: 0.000117 },
      { key: "interactive", requests: 1, tokens: 18, cost: 0.000078 },
    ]);
    expect((report.body.total as { cost: number }).cost).toBe(0.000195);
    const usage = await gw.json("/usage", { headers: alice });
    expect(usage.body).toMatchObject({
      consumer: "alice",
      usage: [expect.objectContaining({ service_type: "chat", total: expect.objectContaining({ requests: 4, tokens: { prompt: 44, completion: 28 } }) })],
    });
    const metrics = await gw.metrics.text();
    expect(metricValue(metrics, "svc_cost_total", { service_type: "chat", model: "chat-small" })).toBeCloseTo(0.000195, 9);
    expect(metricValue(metrics, "svc_batches_total", { status: "completed" })).toBe(1);
    expect(metricValue(metrics, "svc_batch_lines_total", { model: "chat-small", outcome: "succeeded" })).toBe(3);
  });

  it("a line starts only while half the model's shared sync slots are free, and yields without spending an attempt", async () => {
    await start();
    held.hold();
    const before = held.arrived;
    // An interactive request holds one of the model's two slots: a line may not start (it would leave less than half).
    const send = () =>
      gw.request("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "capped", messages: [{ role: "user", content: "hi" }] }),
      });
    const interactive = send();
    const waitFor = async (count: number) => {
      const deadline = Date.now() + 5_000;
      while (held.waiting < count && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
      expect(held.waiting).toBe(count);
    };
    await waitFor(1);
    const id = (await createBatch(gw, ["a", "b"].map((c) => chatLine(c, c, "capped")), { headers: alice })).id as string;
    await drive(gw, async () => (await get(id)).status === "in_progress");
    await gw.runtime.runTaskNow("batches.lines");
    await gw.api.use("batches").idle();
    // Both lines yielded: nothing reached the backend, nothing failed (max_attempts is 1).
    expect(held.arrived - before).toBe(1);
    expect((await get(id)).request_counts).toEqual({ total: 2, completed: 0, failed: 0 });
    held.release();
    expect((await interactive).status).toBe(200);
    await drive(gw, async () => (await get(id)).status === "completed", { advance: { clock, byMs: 1_000 } });
    expect((await get(id)).request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(held.arrived - before).toBe(3);
    const output = await fileLines(gw, (await get(id)).output_file_id as string, alice);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["a", "b"]);
  });
});
