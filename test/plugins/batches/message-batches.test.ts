/**
 * Anthropic's Message Batches on the batch engine, in-process on the memory store and on Redis:
 * a request that fails becomes an `errored` result; cancel leaves the running request to finish
 * and lists the others as `canceled`; a bad request (unknown model, duplicate custom_id, no
 * `requests` array) is a 400 at creation naming its index, with nothing created or sent;
 * `results_url` is built from the request's Host and scheme (X-Forwarded-Proto behind a proxy);
 * another consumer's batch is a 404.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type HeldBackend, startHeldBackend } from "../../fixtures/held-backend.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { type BatchRuntime, batchRuntime, drive, ownRedis, STORES } from "./harness.ts";

const redisUrl = ownRedis();
let llm: FakeBackend;
let held: HeldBackend;
beforeAll(async () => {
  [llm, held] = await Promise.all([startLlmBackend(), startHeldBackend()]);
});
afterAll(async () => {
  await Promise.all([llm.stop(), held.close()]);
});

const config = () => `
server:
  consumer_header: X-Consumer
batches:
  enabled: true
  concurrency: 1
  max_attempts: 1
services:
  - { type: chat, model: claude, provider: messages_api, inference_url: ${llm.url}, operations: { messages: [/v1/messages] } }
  - { type: chat, model: slow, provider: messages_api, inference_url: ${held.url}, operations: { messages: [/v1/messages] } }
`;

const alice = { "x-consumer": "alice", "content-type": "application/json", host: "gw.example:8443", "x-forwarded-proto": "https" };
type Json = Record<string, unknown>;
const request = (id: string, model: string, text: string, extra: Json = {}) => ({
  custom_id: id,
  params: { model, max_tokens: 16, messages: [{ role: "user", content: text }], ...extra },
});

describe.each(STORES)("message batches on the %s store", (store) => {
  let gw: BatchRuntime;
  afterEach(async () => {
    await gw?.close();
    llm.received.length = 0;
  });
  const create = (requests: unknown, headers: Record<string, string> = alice) =>
    gw.json("/v1/messages/batches", { method: "POST", headers, body: JSON.stringify({ requests }) });
  const get = async (id: string) => (await gw.json(`/v1/messages/batches/${id}`, { headers: alice })).body;
  const results = async (id: string) => {
    const response = await gw.request(`/v1/messages/batches/${id}/results`, { headers: alice });
    expect(response.status).toBe(200);
    return (await response.text()).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { custom_id: string; result: Json });
  };

  it("lists a failed request as errored, and builds results_url from Host and scheme", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    // The fake Messages backend refuses an unknown top-level field with a 400.
    const created = await create([request("ok", "claude", "hi"), request("bad", "claude", "hi", { bogus: true })]);
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(id).toMatch(/^msgbatch_/);
    await drive(gw, async () => (await get(id)).processing_status === "ended");
    const batch = await get(id);
    expect(batch).toMatchObject({
      type: "message_batch",
      processing_status: "ended",
      request_counts: { processing: 0, succeeded: 1, errored: 1, canceled: 0, expired: 0 },
      ended_at: expect.any(String),
    });
    expect(batch.results_url).toBe(`https://gw.example:8443/v1/messages/batches/${id}/results`);
    const lines = Object.fromEntries((await results(id)).map((l) => [l.custom_id, l.result]));
    expect(lines.ok).toMatchObject({ type: "succeeded", message: { type: "message", role: "assistant" } });
    expect(lines.bad).toEqual({
      type: "errored",
      error: { type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("bogus") } },
    });
    expect((await gw.json(`/v1/messages/batches/${id}`, { headers: { "x-consumer": "bob" } })).status).toBe(404);
  });

  it("cancel lets the running request finish and lists the others as canceled", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    held.hold();
    const id = (await create([request("a", "slow", "a"), request("b", "slow", "b"), request("c", "slow", "c")])).body.id as string;
    void gw.runtime.runTaskNow("batches.lines");
    const deadline = Date.now() + 5_000;
    while (held.waiting < 1 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    const cancelling = await gw.json(`/v1/messages/batches/${id}/cancel`, { method: "POST", headers: alice });
    expect(cancelling.body).toMatchObject({ processing_status: "canceling", cancel_initiated_at: expect.any(String) });
    held.release();
    await drive(gw, async () => (await get(id)).processing_status === "ended");
    expect((await get(id)).request_counts).toEqual({ processing: 0, succeeded: 1, errored: 0, canceled: 2, expired: 0 });
    const types = Object.fromEntries((await results(id)).map((l) => [l.custom_id, (l.result as { type: string }).type]));
    expect(types).toEqual({ a: "succeeded", b: "canceled", c: "canceled" });
  });

  it("refuses bad requests at creation, naming each, and creates nothing", async () => {
    gw = await batchRuntime(config(), { store, redisUrl });
    const refused = await create([request("a", "claude", "x"), request("a", "claude", "y"), request("m", "nope", "z")]);
    expect(refused.status).toBe(400);
    const message = (refused.body.error as { message: string }).message;
    expect(message).toContain('requests[1]: custom_id "a" is used by an earlier line');
    expect(message).toContain('requests[2]: model "nope" does not exist');
    const shapeless = await gw.json("/v1/messages/batches", { method: "POST", headers: alice, body: JSON.stringify({ items: [] }) });
    expect(shapeless.status).toBe(400);
    expect((shapeless.body.error as { message: string }).message).toContain('"requests" array');
    expect((await gw.json("/v1/messages/batches", { headers: alice })).body).toEqual({ data: [], has_more: false, first_id: null, last_id: null });
    expect(llm.received).toEqual([]);
  });
});
