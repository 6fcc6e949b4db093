/**
 * Where batch lines run, in-process on Redis: a gateway whose relay is not embedded (the Redis
 * default) validates a batch and runs none of its lines; a relay process on the same stores runs
 * them through the gateway's own request path (the gateway's plugins run there for it), so a line
 * counts its tokens for its owner and meets the owner's token budget as in a gateway, and the
 * relay's metrics count the lines it ran. The standalone relay as a real process:
 * test/e2e/batches-relay.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { metricValue } from "../../support/prometheus.ts";
import { type BatchRuntime, batchRuntime, chatLine, createBatch, drive, fileLines, ownRedis } from "./harness.ts";

const redisUrl = ownRedis();
let llm: FakeBackend;
beforeAll(async () => {
  llm = await startLlmBackend();
});
afterAll(async () => {
  await llm.stop();
});

const NOW = Date.UTC(2026, 5, 1, 12);
const DAY = "2026-06-01";

// `redis.addr` makes it a Redis deployment (the relay is not embedded); the runtimes are handed the test's store.
const config = () => `
server:
  consumer_header: X-Consumer
redis:
  addr: ${JSON.stringify(redisUrl())}
batches:
  enabled: true
  concurrency: 1
  max_attempts: 1
rate_limits:
  chat:
    "*": { token_rate: 20, token_period: 1h }
services:
  - type: chat
    model: chat-small
    provider: chat_completions
    inference_url: ${llm.url}
    operations:
      chat: [/v1/chat/completions]
`;

const alice = { "x-consumer": "alice" };
type Json = Record<string, unknown>;

describe("batch lines on Redis without an embedded relay", () => {
  const running: BatchRuntime[] = [];
  afterEach(async () => {
    for (const runtime of running.splice(0).reverse()) await runtime.close();
    llm.received.length = 0;
  });

  it("are run by a relay process, not the gateway, with the owner's usage and token budget", async () => {
    const clock = new ManualClock(NOW);
    const gw = await batchRuntime(config(), { store: "redis", redisUrl, clock });
    running.push(gw);
    const get = async (id: string): Promise<Json> => (await gw.json(`/v1/batches/${id}`, { headers: alice })).body;
    const id = (await createBatch(gw, ["a", "b", "c"].map((c) => chatLine(c, c)), { headers: alice })).id as string;
    await gw.runtime.runTaskNow("batches.sweep");
    await gw.api.use("batches").idle();
    expect(await get(id)).toMatchObject({ status: "in_progress", request_counts: { total: 3, completed: 0, failed: 0 } });
    // The gateway takes no line: it has no line worker without the relay.
    await expect(gw.runtime.runTaskNow("batches.lines")).rejects.toThrow('no background task "batches.lines"');
    expect(llm.received).toHaveLength(0);

    const relay = await batchRuntime(config(), { store: "redis", redisUrl, clock, keepData: true, objects: gw.objects, role: "relay" });
    running.push(relay);
    await drive(relay, async () => (await get(id)).status === "completed");
    const done = await get(id);
    // 18 tokens an answer: the first two lines pass the budget of 20 (it counts after the answer), the third is refused.
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect(llm.received).toHaveLength(2);
    const output = await fileLines(gw, done.output_file_id as string, alice);
    expect(output.map((line) => line.custom_id).sort()).toEqual(["a", "b"]);
    expect(output[0]).toMatchObject({ response: { status_code: 200, body: { object: "chat.completion" } } });
    const [refused] = await fileLines(gw, done.error_file_id as string, alice);
    expect(refused).toMatchObject({
      custom_id: "c",
      response: { status_code: 429, body: { error: { type: "rate_limit_error", message: expect.stringContaining("token") } } },
    });
    // The tokens of the lines the relay ran are the owner's, as a batch's.
    const report = await gw.json(`/-/usage/report?type=chat&period=daily&from=${DAY}&to=${DAY}&group_by=mode`);
    expect(report.status).toBe(200);
    expect(report.body.groups).toEqual([expect.objectContaining({ key: "batch", tokens: 36 })]);
    // Each process counts the lines it ran.
    expect(metricValue(await relay.metrics.text(), "svc_batch_lines_total", { model: "chat-small", outcome: "succeeded" })).toBe(2);
    expect(metricValue(await relay.metrics.text(), "svc_batch_lines_total", { model: "chat-small", outcome: "failed" })).toBe(1);
    expect(metricValue(await gw.metrics.text(), "svc_batch_lines_total", { model: "chat-small", outcome: "succeeded" })).toBe(0);
  });
});
