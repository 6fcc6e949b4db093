/**
 * Cost (docs/cost.md) as a user meets it, on both stores: a price table; mixed streamed,
 * non-streamed, prompt-cached and async traffic priced exactly (to the micro-unit) in the
 * `X-Gateway-Cost` header, usage records, the report's buckets and groups, and
 * `svc_cost_total`; unpriced models listed, not guessed; a price changed by hot reload
 * applies to the next request; a cost budget stops a consumer at the right request, on
 * Redis across two replicas.
 *
 * In-process gateways on the suite's redis-server (database 25 for the traffic, 26 for the
 * replicas) or the memory store, in front of the fake LLM and inference backends. The
 * gateways' clock is the test's: a job's processing time is what the fake fetch advances
 * it by while the backend works. No sleeps: every wait polls with a deadline.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openStores } from "../../adapters/stores.ts";
import { ManualClock } from "../../core/clock.ts";
import { Gateway } from "../../core/gateway.ts";
import { createLogger, type Logger, silentLogger } from "../../core/log.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { waitUntil } from "../support/gateway-process.ts";

const DB = 25;
const REPLICA_DB = 26;
const NOW = Date.UTC(2026, 2, 10, 12);
const DAY = "2026-03-10";
/** What the fake fetch advances the clock by while the inference backend works: the job's processing seconds. */
const JOB_MS = 2500;

type Json = Record<string, unknown>;

let llm: FakeBackend;
let inference: InferenceBackend;

async function flush(db: number): Promise<void> {
  const client = createClient({ url: inject("redisUrl"), database: db });
  await client.connect();
  await client.flushDb();
  await client.close();
}

beforeAll(async () => {
  [llm, inference] = await Promise.all([startLlmBackend(), startInferenceBackend()]);
  await Promise.all([flush(DB), flush(REPLICA_DB)]);
});
afterAll(async () => {
  await Promise.all([llm.stop(), inference.close()]);
});

type Store = "memory" | "redis";

function storeYaml(store: Store, db: number): string {
  return store === "redis" ? `redis:\n  addr: ${JSON.stringify(inject("redisUrl"))}\n  db: ${db}\n` : "";
}

/**
 * Prices per 1M tokens chosen so every cost is a whole number of micro-units:
 *   gpt plain 11 prompt + 7 completion: 11 x 2 + 7 x 8 = 78 -> 0.000078
 *   gpt [cached] 8 of 11 cached: 3 x 2 + 8 x 0.5 + 7 x 8 = 66 -> 0.000066
 *   claude-b, priced by its backend model claude-real (which wins over the alias's price):
 *     [cached] 12 fresh + 2000 read + 300 written, 5 out: 36 + 600 + 1125 + 75 = 1836 -> 0.001836
 *     plain 12 in, 5 out: 36 + 75 = 111 -> 0.000111
 *   whisper 2.5 s x 0.0006 -> 0.0015
 */
function trafficConfig(store: Store, objects: string, gptInput = 2): string {
  return `
server:
  consumer_header: X-Consumer
${storeYaml(store, DB)}object_store:
  dir: ${JSON.stringify(objects)}
relay:
  embedded: true
llm:
  count_streamed_tokens: true
pricing:
  currency: USD
  models:
    gpt: {input: ${gptInput}, output: 8, cached_input: 0.5}
    claude-b: {input: 100, output: 100}
    whisper: {per_second: 0.0006}
  backend_models:
    claude-real: {input: 3, output: 15, cached_input: 0.3, cache_write: 3.75}
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: chat
    model: claude-b
    backend_model: claude-real
    provider: messages_api
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: chat
    model: free
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: asr
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
`;
}

function gatewayFor(readConfig: () => string, clock: ManualClock, log: Logger = silentLogger): Promise<Gateway> {
  return Gateway.create({
    readConfig: async () => readConfig(),
    env: {},
    importModule: () => Promise.reject(new Error("no user plugins here")),
    openStores,
    plugins: builtinPlugins,
    clock,
    log,
    fetch: async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url.startsWith(inference.url)) clock.advance(JOB_MS);
      return await globalThis.fetch(input, init);
    },
  });
}

async function chat(gateway: Gateway, consumer: string, model: string, text = "hi", stream = false): Promise<Response> {
  const response = await gateway.fetch(
    new Request("http://gateway/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": consumer },
      body: JSON.stringify({
        model,
        messages: [{ role: "user", content: text }],
        max_tokens: 16,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
    }),
  );
  await response.clone().arrayBuffer();
  return response;
}

async function getJson(gateway: Gateway, path: string, headers: Record<string, string> = {}): Promise<Json> {
  const response = await gateway.fetch(new Request(`http://gateway${path}`, { headers }));
  expect(response.status, path).toBe(200);
  return (await response.json()) as Json;
}

async function metricValue(gateway: Gateway, name: string, labels: string): Promise<number> {
  const text = await (await gateway.fetch(new Request("http://gateway/metrics"))).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

const usageOf = async (gateway: Gateway, consumer: string, type: string) => {
  const page = (await getJson(gateway, `/-/usage?consumer=${consumer}`)) as {
    consumers: Array<{ usage: Array<{ service_type: string; total: Json; window?: Json }> }>;
  };
  return page.consumers[0]?.usage.find((u) => u.service_type === type);
};

describe.each<Store>(["memory", "redis"])("priced traffic on %s", (store) => {
  const clock = new ManualClock(NOW);
  let config: string;
  let gateway: Gateway;
  beforeAll(async () => {
    config = trafficConfig(store, mkdtempSync(join(tmpdir(), "gw-cost-")));
    gateway = await gatewayFor(() => config, clock);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it("prices each answer in its header, the records, the report's buckets and groups, and the metric", async () => {
    const plain = await chat(gateway, "ann", "gpt");
    expect(plain.status).toBe(200);
    expect(plain.headers.get("x-gateway-cost")).toBe("0.000078");
    expect((await chat(gateway, "ann", "gpt", "again [cached]")).headers.get("x-gateway-cost")).toBe("0.000066");
    // A stream's cost is counted when it ends; its headers left before the usage, so none there.
    const streamed = await chat(gateway, "ann", "gpt", "hi", true);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("x-gateway-cost")).toBeNull();
    expect((await chat(gateway, "bob", "claude-b", "long prompt [cached]")).headers.get("x-gateway-cost")).toBe("0.001836");
    expect((await chat(gateway, "bob", "claude-b")).headers.get("x-gateway-cost")).toBe("0.000111");
    // Unpriced: served, costs nothing, listed in a metric; never guessed.
    const free = await chat(gateway, "bob", "free");
    expect(free.status).toBe(200);
    expect(free.headers.get("x-gateway-cost")).toBeNull();

    const form = new FormData();
    form.append("file", new Blob(["audio"], { type: "audio/wav" }), "a.wav");
    const submitted = await gateway.fetch(new Request("http://gateway/jobs/asr", { method: "POST", body: form, headers: { "x-consumer": "cat" } }));
    expect(submitted.status).toBe(202);

    await waitUntil(async () => (await usageOf(gateway, "cat", "asr"))?.total.cost === 0.0015, 15_000, () => "the job's cost never arrived");
    await waitUntil(async () => (await usageOf(gateway, "ann", "chat"))?.total.cost === 0.000222, 10_000, () => "ann's streamed cost never arrived");

    expect((await usageOf(gateway, "ann", "chat"))?.total).toEqual({ requests: 3, tokens: { prompt: 33, completion: 21 }, cost: 0.000222 });
    expect((await usageOf(gateway, "bob", "chat"))?.total).toEqual({ requests: 3, tokens: { prompt: 2312 + 12 + 11, completion: 5 + 5 + 7 }, cost: 0.001947 });
    expect((await usageOf(gateway, "cat", "asr"))?.total).toEqual({ requests: 1, jobs: 1, processing_time_seconds: 2.5, cost: 0.0015 });

    const byConsumer = (await getJson(gateway, `/-/usage/report?type=chat&period=daily&from=${DAY}&to=${DAY}&total=true&group_by=consumer`)) as Json & {
      buckets: Json[];
      groups: Json[];
    };
    expect(byConsumer.buckets).toEqual([{ bucket: "20260310", requests: 6, tokens: { prompt: 2368, completion: 38 }, cost: 0.002169 }]);
    expect(byConsumer.total).toEqual({ requests: 6, tokens: { prompt: 2368, completion: 38 }, cost: 0.002169 });
    expect(byConsumer.groups).toEqual([
      { key: "bob", requests: 3, tokens: 2352, cost: 0.001947 },
      { key: "ann", requests: 3, tokens: 54, cost: 0.000222 },
    ]);
    const byModel = (await getJson(gateway, `/-/usage/report?type=chat&period=monthly&from=${DAY}&to=${DAY}&group_by=model`)) as { groups: Json[] };
    expect(byModel.groups).toEqual([
      { key: "claude-b", requests: 2, tokens: 2334, cost: 0.001947 },
      { key: "gpt", requests: 3, tokens: 54, cost: 0.000222 },
      { key: "free", requests: 1, tokens: 18, cost: 0 },
    ]);
    // Without API keys, a request's key is its consumer.
    const byKey = (await getJson(gateway, `/-/usage/report?type=asr&period=weekly&from=${DAY}&to=${DAY}&group_by=key`)) as { groups: Json[]; buckets: Json[] };
    expect(byKey.groups).toEqual([{ key: "cat", requests: 1, tokens: 0, cost: 0.0015 }]);
    expect(byKey.buckets[0]).toMatchObject({ requests: 1, jobs: 1, processing_time_seconds: 2.5, cost: 0.0015 });

    expect(await metricValue(gateway, "svc_cost_total", 'service_type="chat",model="gpt"')).toBeCloseTo(0.000222, 12);
    expect(await metricValue(gateway, "svc_cost_total", 'service_type="chat",model="claude-b"')).toBeCloseTo(0.001947, 12);
    expect(await metricValue(gateway, "svc_cost_total", 'service_type="asr",model="whisper"')).toBeCloseTo(0.0015, 12);
    expect(await metricValue(gateway, "svc_cost_unpriced_total", 'service_type="chat",model="free"')).toBe(1);
  });

  it("refuses a group_by it does not know, naming the choices", async () => {
    const response = await gateway.fetch(new Request(`http://gateway/-/usage/report?type=chat&period=daily&from=${DAY}&to=${DAY}&group_by=team`));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'query parameter "group_by" must be one of consumer, model, key, mode; got "team"',
    );
  });

  it("applies a price changed by hot reload to the next request only", async () => {
    const before = await usageOf(gateway, "dan", "chat");
    expect(before).toBeUndefined();
    expect((await chat(gateway, "dan", "gpt")).headers.get("x-gateway-cost")).toBe("0.000078");
    config = trafficConfig(store, mkdtempSync(join(tmpdir(), "gw-cost-")), 4);
    const reloaded = await gateway.fetch(new Request("http://gateway/-/reload", { method: "POST" }));
    expect(reloaded.status).toBe(200);
    // 11 x 4 + 7 x 8 = 100 per 1M.
    expect((await chat(gateway, "dan", "gpt")).headers.get("x-gateway-cost")).toBe("0.000100");
    await waitUntil(async () => (await usageOf(gateway, "dan", "chat"))?.total.requests === 2, 10_000, () => "dan's requests never counted");
    expect((await usageOf(gateway, "dan", "chat"))?.total.cost).toBe(0.000178);
  });
});

describe("unpriced models", () => {
  it("logs one model_unpriced warning per model, not one per request", async () => {
    const lines: Json[] = [];
    // No collapsing of repeated lines: what is written is what pricing logged.
    const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Json), repeatWindowMs: 0 });
    const config = `
pricing:
  models:
    gpt: {input: 2, output: 8}
services:
${
      ["free", "cheap"].map((model) =>
        `  - { type: chat, model: ${model}, provider: chat_completions, inference_url: ${
          JSON.stringify(llm.url)
        }, operations: { chat: [/v1/chat/completions] } }`
      ).join("\n")
    }
`;
    const gateway = await gatewayFor(() => config, new ManualClock(NOW), log);
    try {
      for (const model of ["free", "free", "cheap", "free", "cheap"]) expect((await chat(gateway, "ann", model)).status).toBe(200);
      await waitUntil(
        async () => (await metricValue(gateway, "svc_cost_unpriced_total", 'service_type="chat",model="free"')) === 3,
        10_000,
        () => "free's 3 responses never counted",
      );
      await waitUntil(
        async () => (await metricValue(gateway, "svc_cost_unpriced_total", 'service_type="chat",model="cheap"')) === 2,
        10_000,
        () => "cheap's 2 responses never counted",
      );
      expect(lines.filter((line) => line.event === "model_unpriced")).toEqual([
        expect.objectContaining({
          level: "warn",
          service_type: "chat",
          model: "free",
          message: "no price in pricing.models or pricing.backend_models: counted as costing nothing",
        }),
        expect.objectContaining({ level: "warn", service_type: "chat", model: "cheap" }),
      ]);
    } finally {
      await gateway.close();
    }
  });
});

/** A cost budget of 0.0002 USD per hour: gpt answers cost 0.000078, so the fourth request is the first refused. */
function budgetConfig(store: Store): string {
  return `
server:
  consumer_header: X-Consumer
${storeYaml(store, REPLICA_DB)}pricing:
  models:
    gpt: {input: 2, output: 8}
  backend_models:
    gpt: {input: 2, output: 8}
rate_limits:
  chat:
    "*": {cost_rate: 0.0002, cost_period: 1h}
services:
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: chat
    model: mini
    backend_model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
    token_limits:
      "*": {cost_rate: 0.0001, cost_period: 1h}
`;
}

describe.each<Store>(["memory", "redis"])("a cost budget on %s", (store) => {
  const clock = new ManualClock(NOW);
  const replicas: Gateway[] = [];
  beforeAll(async () => {
    const first = await gatewayFor(() => budgetConfig(store), clock);
    // Redis: two replicas on one store. The memory store serves one process: one gateway.
    replicas.push(first, store === "redis" ? await gatewayFor(() => budgetConfig(store), clock) : first);
  });
  afterAll(async () => {
    await Promise.all([...new Set(replicas)].map((gateway) => gateway.close()));
  });

  it("lets the request that crosses the budget pass and refuses the next with 429, Retry-After and the budget named", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const replica = replicas[i % 2];
      const response = await chat(replica, "eve", "gpt");
      statuses.push(response.status);
      // The cost is added after the answer: wait until the other replica can see it.
      const expected = Math.round(78 * (i + 1)) / 1e6;
      await waitUntil(
        async () => (await usageOf(replicas[(i + 1) % 2], "eve", "chat"))?.window?.cost === expected,
        10_000,
        () => `cost window never reached ${expected}`,
      );
    }
    expect(statuses).toEqual([200, 200, 200]);
    const window = (await usageOf(replicas[0], "eve", "chat"))?.window;
    expect(window?.cost).toBe(0.000234);
    expect(Date.parse(String(window?.reset_at))).toBeGreaterThan(NOW);

    const refused = await chat(replicas[1], "eve", "gpt");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /^cost budget of service type "chat" used up: 0\.000234 of 0\.0002 USD per 1h; retry in \d+s, when the window resets$/,
    );
    // Another consumer has a budget of their own.
    expect((await chat(replicas[0], "fay", "gpt")).status).toBe(200);
  });

  it("checks a model's budget (token_limits) before the type's, across the replicas", async () => {
    for (let i = 0; i < 2; i++) {
      expect((await chat(replicas[i % 2], "gus", "mini")).status).toBe(200);
      const expected = Math.round(78 * (i + 1)) / 1e6;
      await waitUntil(
        async () => (await usageOf(replicas[(i + 1) % 2], "gus", "chat"))?.window?.cost === expected,
        10_000,
        () => `cost window never reached ${expected}`,
      );
    }
    const refused = await chat(replicas[0], "gus", "mini");
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /^cost budget of model "mini" used up: 0\.000156 of 0\.0001 USD per 1h; /,
    );
    // The type's budget (0.0002) still has room for the other model.
    expect((await chat(replicas[1], "gus", "gpt")).status).toBe(200);
  });
});
