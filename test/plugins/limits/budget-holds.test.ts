/**
 * Budgets under concurrency (hold.ts): an LLM request holds its estimated cost (and, with
 * `llm.reserve_token_budgets`, its tokens) from admission until its answer is counted, so 50
 * requests sent at once against a budget that fits 5 cannot all pass. On the memory store and
 * on Redis (database 22) with two replicas, for plain answers and streams, for a consumer's
 * budgets and an API key's; the answer's count replaces the hold (the window ends at what was
 * spent, not what was estimated), and a hold whose request never ends expires (the clock is
 * driven past its deadline).
 *
 * The backend is the injected fetch: its calls wait until the test answers them, each with
 * 11 prompt + 7 completion tokens. At gpt's price (2 in, 8 out per 1M) an answer costs
 * 11 x 2 + 7 x 8 = 78 per 1M, 0.000078. A plain request of `body(...)` (74 bytes: 19 prompt
 * tokens by its size, and max_tokens 7) is estimated at 19 x 2 + 7 x 8 = 94 per 1M and 26
 * tokens; a stream (128 bytes) at 32 x 2 + 56 = 120. Against a budget of 5 x 78 = 390, five
 * plain requests or four streams fit at once; one at a time, five pass.
 */
import { createClient } from "redis";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";
import { HeldBackend, until } from "./harness.ts";

const DB = 22;
const NOW = Date.UTC(2026, 4, 4, 12);
/** What one answer costs, in nano-units of the currency. */
const ANSWER_NANOS = 78_000;
const ANSWER_TOKENS = 18;
/** How long a hold whose request never ends lasts (docs/limits.md). */
const HOLD_MS = 10 * 60 * 1000;

type Json = Record<string, unknown>;

const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: ANSWER_TOKENS };

function chatAnswer(): Response {
  return Response.json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "gpt",
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage,
  });
}

function streamAnswer(): Response {
  const base = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt" };
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "hello" }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { ...base, choices: [], usage },
  ];
  const text = `${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("")}data: [DONE]\n\n`;
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}

const body = (stream: boolean) =>
  JSON.stringify({
    model: "gpt",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 7,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

function config(limits: string, llm = ""): string {
  return `
server: { consumer_header: X-Consumer }
llm: { count_streamed_tokens: true${llm} }
pricing:
  models:
    gpt: {input: 2, output: 8}
rate_limits:
  chat:
    "*": ${limits}
services:
  - { type: chat, model: gpt, provider: chat_completions, inference_url: "http://backend", operations: { chat: [/v1/chat/completions] } }
`;
}

/** A budget that fits five answers: the sixth request, one at a time, is the first refused. */
const FITS_FIVE_DOLLARS = `{cost_rate: ${(5 * ANSWER_NANOS) / 1e9}, cost_period: 1h}`;

interface Replicas {
  /** One runtime on the memory store; two on one Redis. */
  gateways: TestRuntime[];
  kv: KvStore;
  backend: HeldBackend;
  clock: ManualClock;
}

async function flush(): Promise<void> {
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  await client.flushDb();
  await client.close();
}

const stores: Array<[string, number]> = [
  ["the memory store", 1],
  ["Redis with two replicas", 2],
];

interface Refusal {
  retryAfter: string | null;
  message: string;
}

interface Outcome {
  admitted: number;
  refused: Refusal[];
}

/**
 * Sends `count` requests at once, alternating between the replicas, and waits until each has
 * reached the backend or been refused; then answers every backend call and reads every body.
 */
async function burst(r: Replicas, consumer: string, count: number, stream: boolean, headers: Record<string, string> = {}): Promise<Outcome> {
  const refused: Refusal[] = [];
  const answered: Promise<number>[] = [];
  for (let i = 0; i < count; i++) {
    const sent = r.gateways[i % r.gateways.length].request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer, ...headers },
      body: body(stream),
    });
    answered.push(
      sent.then(async (response) => {
        const text = await response.text();
        if (response.status === 429) {
          refused.push({ retryAfter: response.headers.get("retry-after"), message: (JSON.parse(text) as { error: { message: string } }).error.message });
        }
        return response.status;
      }),
    );
  }
  await until(() => r.backend.waiting.length + refused.length === count, "every request admitted or refused");
  const admitted = r.backend.waiting.length;
  for (const call of r.backend.waiting) call.answer(stream ? streamAnswer() : chatAnswer());
  const statuses = await Promise.all(answered);
  expect(statuses.filter((status) => status === 200)).toHaveLength(admitted);
  return { admitted, refused };
}

describe.each(stores)("budgets under concurrency on %s", (_name, replicas) => {
  const closing: Array<{ close(): Promise<void> }> = [];
  let backend: HeldBackend;
  beforeAll(async () => {
    if (replicas > 1) await flush();
  });
  afterEach(async () => {
    backend?.answerAll();
    for (const item of closing.splice(0).reverse()) await item.close();
  });

  async function start(yaml: string): Promise<Replicas> {
    const clock = new ManualClock(NOW);
    backend = new HeldBackend();
    const gateways: TestRuntime[] = [];
    for (let i = 0; i < replicas; i++) {
      const kv = replicas > 1 ? await RedisKv.connect({ url: inject("redisUrl"), db: DB }) : undefined;
      if (kv) closing.push(kv);
      const gateway = await startTestRuntime(yaml, builtinPlugins, { clock, fetch: backend.fetch, ...(kv ? { kv } : {}) });
      closing.push(gateway);
      gateways.push(gateway);
    }
    return { gateways, kv: gateways[0].kv, backend, clock };
  }

  const spent = async (kv: KvStore, key: string) => Number((await kv.get(key)) ?? "0");

  it("lets at most 5 of 50 concurrent requests through a dollar budget that fits 5; the rest get 429 with Retry-After 1", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `plain-${crypto.randomUUID()}`;
    const { admitted, refused } = await burst(r, consumer, 50, false);
    // Every request is estimated at more than it costs, so no more than the budget's five pass.
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    expect(refused).toHaveLength(50 - admitted);
    expect(refused[0].retryAfter).toBe("1");
    expect(refused[0].message).toMatch(
      /^cost budget of service type "chat" is held by requests in flight: 0 spent and 0\.000\d+ held of 0\.00039 USD per 1h; retry in 1s, when their answers are counted$/,
    );
    // What was spent is what the answers cost, and nothing is held any more.
    expect(await spent(r.kv, `cost:chat:${consumer}`)).toBe(admitted * ANSWER_NANOS);
    expect(await r.kv.exists(`rsv:cost:chat:${consumer}`)).toBe(false);
  });

  it("lets at most 5 of 50 concurrent streams through a dollar budget that fits 5", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `stream-${crypto.randomUUID()}`;
    const { admitted, refused } = await burst(r, consumer, 50, true);
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    expect(refused).toHaveLength(50 - admitted);
    expect(await spent(r.kv, `cost:chat:${consumer}`)).toBe(admitted * ANSWER_NANOS);
    expect(await r.kv.exists(`rsv:cost:chat:${consumer}`)).toBe(false);
  });

  it("keeps one request at a time as before: the request that crosses passes, the next gets 429 until the window resets", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `one-${crypto.randomUUID()}`;
    for (let i = 1; i <= 5; i++) {
      expect((await burst(r, consumer, 1, i % 2 === 0)).admitted).toBe(1);
      // The answer's count replaced the hold: the window holds what was spent, not what was estimated.
      expect(await spent(r.kv, `cost:chat:${consumer}`)).toBe(i * ANSWER_NANOS);
      expect(await r.kv.exists(`rsv:cost:chat:${consumer}`)).toBe(false);
    }
    const { admitted, refused } = await burst(r, consumer, 1, false);
    expect(admitted).toBe(0);
    expect(Number(refused[0].retryAfter)).toBeGreaterThan(3000);
    expect(refused[0].message).toMatch(/^cost budget of service type "chat" used up: 0\.00039 of 0\.00039 USD per 1h; retry in \d+s, when the window resets$/);
  });

  it("holds a request's estimate while it runs, and replaces it with what its answer cost", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `settle-${crypto.randomUUID()}`;
    const pending = r.gateways[0].request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: body(false),
    });
    await until(() => r.backend.waiting.length === 1, "the backend call");
    const held = await r.kv.zrangeByScore(`rsv:cost:chat:${consumer}`, -Infinity, Infinity);
    expect(held).toHaveLength(1);
    expect(held[0]).toMatch(/^94000:/);
    expect(await r.kv.zscore(`rsv:cost:chat:${consumer}`, held[0])).toBe(NOW + HOLD_MS);
    r.backend.waiting[0].answer(chatAnswer());
    const response = await pending;
    expect(response.status).toBe(200);
    expect(response.headers.get("x-gateway-cost")).toBe("0.000078");
    expect(await spent(r.kv, `cost:chat:${consumer}`)).toBe(ANSWER_NANOS);
    expect(await r.kv.exists(`rsv:cost:chat:${consumer}`)).toBe(false);
  });

  it("gives a hold back when the request ends without a count (a backend error)", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `error-${crypto.randomUUID()}`;
    const pending = r.gateways[0].request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: body(false),
    });
    await until(() => r.backend.waiting.length === 1, "the backend call");
    r.backend.waiting[0].answer(Response.json({ error: { message: "bad", type: "invalid_request_error" } }, { status: 400 }));
    expect((await pending).status).toBe(400);
    expect(await r.kv.exists(`rsv:cost:chat:${consumer}`)).toBe(false);
    expect(await r.kv.exists(`cost:chat:${consumer}`)).toBe(false);
  });

  it("gives a hold back when the client goes away before the answer", async () => {
    const r = await start(config(FITS_FIVE_DOLLARS));
    const consumer = `gone-${crypto.randomUUID()}`;
    const client = new AbortController();
    const pending = r.gateways[0].request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: body(true),
      signal: client.signal,
    });
    await until(() => r.backend.waiting.length === 1, "the backend call");
    expect(await r.kv.zcard(`rsv:cost:chat:${consumer}`)).toBe(1);
    client.abort();
    await pending.then((response) => response.text()).catch(() => undefined);
    await until(async () => !(await r.kv.exists(`rsv:cost:chat:${consumer}`)), "the hold given back");
    expect(await r.kv.exists(`cost:chat:${consumer}`)).toBe(false);
  });

  it("lets a hold whose request never ends expire: the budget is free again once its deadline passed", async () => {
    // One request's estimate (94) fills a budget of 0.00008.
    const r = await start(config("{cost_rate: 0.00008, cost_period: 1h}"));
    const consumer = `orphan-${crypto.randomUUID()}`;
    const send = (gateway: TestRuntime) =>
      gateway.request("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", "x-consumer": consumer }, body: body(false) });
    // Its backend never answers: the request stays in flight as on a replica that crashed.
    void send(r.gateways[0]);
    await until(() => r.backend.waiting.length === 1, "the first backend call");
    const refused = await send(r.gateways[r.gateways.length - 1]);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    r.clock.advance(HOLD_MS - 1);
    expect((await send(r.gateways[0])).status).toBe(429);
    r.clock.advance(1);
    void send(r.gateways[r.gateways.length - 1]);
    await until(() => r.backend.waiting.length === 2, "the second request admitted");
    expect(await r.kv.zcard(`rsv:cost:chat:${consumer}`)).toBe(1);
  });

  it("keeps the spec's rule for token budgets by default: concurrent requests all pass", async () => {
    const r = await start(config(`{token_rate: ${5 * ANSWER_TOKENS}, token_period: 1h}`));
    const consumer = `tokens-${crypto.randomUUID()}`;
    const { admitted } = await burst(r, consumer, 20, false);
    expect(admitted).toBe(20);
    // Counted after the answers, as before (nobody waits for it).
    await until(async () => (await spent(r.kv, `tok:chat:${consumer}`)) === 20 * ANSWER_TOKENS, "every answer's tokens counted");
  });

  it("holds token budgets with llm.reserve_token_budgets: at most 5 of 50 concurrent requests pass a budget that fits 5", async () => {
    const r = await start(config(`{token_rate: ${5 * ANSWER_TOKENS}, token_period: 1h}`, ", reserve_token_budgets: true"));
    const consumer = `reserved-${crypto.randomUUID()}`;
    const { admitted, refused } = await burst(r, consumer, 50, false);
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    expect(refused[0].message).toMatch(
      /^token budget of service type "chat" is held by requests in flight: 0 used and \d+ held of 90 tokens per 1h; retry in 1s, when their answers are counted$/,
    );
    expect(await spent(r.kv, `tok:chat:${consumer}`)).toBe(admitted * ANSWER_TOKENS);
    expect(await r.kv.exists(`rsv:tok:chat:${consumer}`)).toBe(false);
  });
});

describe.each(stores)("an API key's budgets under concurrency on %s", (_name, replicas) => {
  const closing: Array<{ close(): Promise<void> }> = [];
  let backend: HeldBackend;
  beforeAll(async () => {
    if (replicas > 1) await flush();
  });
  afterEach(async () => {
    backend?.answerAll();
    for (const item of closing.splice(0).reverse()) await item.close();
  });

  /** Replicas with API keys on, and a key of `limits` created. */
  async function withKey(limits: Json, llm = ""): Promise<{ r: Replicas; id: string; key: string }> {
    const clock = new ManualClock(NOW);
    backend = new HeldBackend();
    const yaml = `
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: holds-secret } }
llm: { count_streamed_tokens: true${llm} }
pricing:
  models:
    gpt: {input: 2, output: 8}
services:
  - { type: chat, model: gpt, provider: chat_completions, inference_url: "http://backend", operations: { chat: [/v1/chat/completions] } }
`;
    const gateways: TestRuntime[] = [];
    for (let i = 0; i < replicas; i++) {
      const kv = replicas > 1 ? await RedisKv.connect({ url: inject("redisUrl"), db: DB }) : undefined;
      if (kv) closing.push(kv);
      const gateway = await startTestRuntime(yaml, builtinPlugins, { clock, fetch: backend.fetch, ...(kv ? { kv } : {}) });
      closing.push(gateway);
      gateways.push(gateway);
    }
    const created = await gateways[0].request("/-/keys", {
      method: "POST",
      headers: { authorization: "Bearer admin-secret", "content-type": "application/json" },
      body: JSON.stringify({ consumer: `team-${crypto.randomUUID()}`, limits }),
    });
    expect(created.status).toBe(201);
    const { id, key } = (await created.json()) as { id: string; key: string };
    return { r: { gateways, kv: gateways[0].kv, backend, clock }, id, key };
  }

  it("lets at most 5 of 50 concurrent requests of one key through its dollar budget that fits 5", async () => {
    const { r, id, key } = await withKey({ cost_rate: (5 * ANSWER_NANOS) / 1e9, cost_period: "1h" });
    const { admitted, refused } = await burst(r, "ignored", 50, false, { authorization: `Bearer ${key}` });
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    expect(refused[0].message).toMatch(new RegExp(`^cost budget of API key "${id}" is held by requests in flight: `));
    const window = `cost:key:${encodeURIComponent(id)}`;
    expect(Number(await r.kv.get(window))).toBe(admitted * ANSWER_NANOS);
    expect(await r.kv.exists(`rsv:${window}`)).toBe(false);
  });

  it("holds a key's token budget with llm.reserve_token_budgets: at most 5 of 50 concurrent streams pass", async () => {
    const { r, id, key } = await withKey({ token_rate: 5 * ANSWER_TOKENS, token_period: "1h" }, ", reserve_token_budgets: true");
    const { admitted, refused } = await burst(r, "ignored", 50, true, { authorization: `Bearer ${key}` });
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    expect(refused[0].message).toMatch(
      /^token budget of this API key is held by requests in flight: 0 used and \d+ held of 90 tokens per 1h; retry in 1s, when their answers are counted$/,
    );
    const window = `tok:key:${encodeURIComponent(id)}`;
    expect(Number(await r.kv.get(window))).toBe(admitted * ANSWER_TOKENS);
    expect(await r.kv.exists(`rsv:${window}`)).toBe(false);
  });
});

describe("the estimate's price", () => {
  it("is the dearest of the prices the request may be answered at (a model whose backends are priced differently)", async () => {
    const backend = new HeldBackend();
    const yaml = `
server: { consumer_header: X-Consumer }
pricing:
  models:
    gpt: {input: 2, output: 8}
  backend_models:
    gpt-large: {input: 20, output: 80}
rate_limits:
  chat:
    "*": {cost_rate: 1, cost_period: 1h}
services:
  - type: chat
    model: gpt
    provider: chat_completions
    backends: [{url: "http://backend"}, {url: "http://backend-2", model: gpt-large, weight: 0}]
    operations: { chat: [/v1/chat/completions] }
`;
    const gateway = await startTestRuntime(yaml, builtinPlugins, { clock: new ManualClock(NOW), fetch: backend.fetch });
    try {
      const pending = gateway.request("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", "x-consumer": "ann" },
        body: body(false),
      });
      await until(() => backend.waiting.length === 1, "the backend call");
      // 19 x 20 + 7 x 80 = 940 per 1M at gpt-large's price (the first backend, at gpt's, would answer 94).
      expect(await gateway.kv.zrangeByScore("rsv:cost:chat:ann", -Infinity, Infinity)).toEqual([expect.stringMatching(/^940000:/)]);
      backend.waiting[0].answer(chatAnswer());
      expect((await pending).status).toBe(200);
      expect(await gateway.kv.get("cost:chat:ann")).toBe(String(ANSWER_NANOS));
    } finally {
      backend.answerAll();
      await gateway.close();
    }
  });
});
