/**
 * An API key's own dollar budget (docs/cost.md#per-key-budgets: `limits.cost_rate` / `cost_period`)
 * and usage by key (`/-/usage/report?group_by=key`), on the memory store and on Redis (database 28;
 * the two-replica test on database 29): the request that crosses a key's budget passes and the
 * next gets 429 naming the key, another key of the same consumer keeps its own budget, an
 * async job's processing cost counts against the key it was submitted with, the admin API
 * checks the two fields, and the report ranks keys by cost to the micro-dollar.
 *
 * Prices per 1M tokens (the fake LLM backend answers 11 prompt + 7 completion tokens):
 *   gpt   11 x 2 + 7 x 8   = 78  -> 0.000078 a request
 *   big   11 x 10 + 7 x 20 = 250 -> 0.00025 a request
 */
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { toNanos } from "../../../core/pricing/price.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import admin from "../../../plugins/admin/index.ts";
import auth from "../../../plugins/auth/index.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import pricing from "../../../plugins/pricing/index.ts";
import { type FakeBackend, startLlmBackend } from "../../fixtures/llm-backends.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";
import { jobForm, type LimitsRuntime, limitsRuntime, until } from "./harness.ts";

const DB = 28;
const REPLICA_DB = 29;
const NOW = Date.UTC(2026, 2, 10, 12);
const DAY = "2026-03-10";
const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };

type Json = Record<string, unknown>;
interface Created {
  id: string;
  key: string;
}

let llm: FakeBackend;

async function flush(db: number): Promise<void> {
  const client = createClient({ url: inject("redisUrl"), database: db });
  await client.connect();
  await client.flushDb();
  await client.close();
}

beforeAll(async () => {
  llm = await startLlmBackend();
  await Promise.all([flush(DB), flush(REPLICA_DB)]);
});
afterAll(async () => await llm.stop());

const llmConfig = () => `
server: { consumer_header: X-Consumer }
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: key-cost-secret } }
pricing:
  currency: USD
  models:
    gpt: {input: 2, output: 8}
    big: {input: 10, output: 20}
    cheap: {input: 2, output: 8}
    dear: {input: 10, output: 20}
services:
  - { type: chat, model: gpt, provider: chat_completions, inference_url: "${llm.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: big, provider: chat_completions, inference_url: "${llm.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: ranked, model: cheap, provider: chat_completions, inference_url: "${llm.url}", operations: { chat: [/v1/chat/completions] } }
  - { type: ranked, model: dear, provider: chat_completions, inference_url: "${llm.url}", operations: { chat: [/v1/chat/completions] } }
`;

interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

async function createKey(gw: Requester, body: Json): Promise<Created> {
  const res = await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  return (await res.json()) as Created;
}

async function chat(gw: Requester, key: string, model: string): Promise<Response> {
  const res = await gw.request("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.clone().arrayBuffer();
  return res;
}

const messageOf = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;

/** The key's cost window as stored (nano-units), 0 when none is open. */
const keyWindow = async (kv: KvStore, id: string) => Number((await kv.get(`cost:key:${encodeURIComponent(id)}`)) ?? "0");

async function report(gw: Requester, type: string, day: string, groupBy: string): Promise<Json[]> {
  const res = await gw.request(`/-/usage/report?type=${type}&period=daily&from=${day}&to=${day}&group_by=${groupBy}`, { headers: ADMIN });
  expect(res.status).toBe(200);
  return ((await res.json()) as { groups: Json[] }).groups;
}

const stores: Array<[string, (db: number) => Promise<KvStore | undefined>]> = [
  ["memory", async () => undefined],
  ["redis", async (db) => await RedisKv.connect({ url: inject("redisUrl"), db })],
];

describe.each(stores)("API key cost budgets on the %s store", (_name, open) => {
  const closing: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const item of closing.splice(0).reverse()) await item.close();
  });

  async function start(): Promise<TestRuntime> {
    const kv = await open(DB);
    if (kv) closing.push(kv);
    const gw = await startTestRuntime(llmConfig(), builtinPlugins, { clock: new ManualClock(NOW), ...(kv ? { kv } : {}) });
    closing.push(gw);
    return gw;
  }

  it("stops a key at the right request: the crossing one passes, the next gets 429 naming the key; another key of the consumer has its own", async () => {
    const gw = await start();
    const spender = await createKey(gw, { consumer: "team", limits: { cost_rate: 0.0002, cost_period: "1h" } });
    const sibling = await createKey(gw, { consumer: "team", limits: { cost_rate: 0.0002, cost_period: "1h" } });
    for (let i = 1; i <= 3; i++) {
      expect((await chat(gw, spender.key, "gpt")).status).toBe(200);
      // Costs are added after the answer.
      await until(async () => (await keyWindow(gw.kv, spender.id)) === toNanos(0.000078) * i, `the key's window at ${78 * i} micro-dollars`);
    }
    const refused = await chat(gw, spender.key, "gpt");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3500);
    expect(await messageOf(refused)).toMatch(
      new RegExp(`^cost budget of API key "${spender.id}" used up: 0\\.000234 of 0\\.0002 USD per 1h; retry in \\d+s, when the window resets$`),
    );
    // The same consumer with another key: a budget of its own, untouched.
    expect((await chat(gw, sibling.key, "gpt")).status).toBe(200);
    await until(async () => (await keyWindow(gw.kv, sibling.id)) === toNanos(0.000078), "the sibling's window");
  });

  it("ranks keys by cost in /-/usage/report?group_by=key, exact to the micro-dollar", async () => {
    const gw = await start();
    const cheap = await createKey(gw, { consumer: "rank" });
    const dear = await createKey(gw, { consumer: "rank" });
    expect((await chat(gw, cheap.key, "cheap")).status).toBe(200);
    expect((await chat(gw, cheap.key, "cheap")).status).toBe(200);
    expect((await chat(gw, dear.key, "dear")).status).toBe(200);
    // The key with fewer requests but more cost comes first.
    expect(await report(gw, "ranked", DAY, "key")).toEqual([
      { key: dear.id, requests: 1, tokens: 18, cost: 0.00025 },
      { key: cheap.id, requests: 2, tokens: 36, cost: 0.000156 },
    ]);
    expect(await report(gw, "ranked", DAY, "consumer")).toEqual([{ key: "rank", requests: 3, tokens: 54, cost: 0.000406 }]);
  });

  it("checks cost_rate and cost_period on POST and PATCH /-/keys, and shows them", async () => {
    const gw = await start();
    const bad = await gw.request("/-/keys", {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ consumer: "c", limits: { cost_rate: -1, cost_period: "soon" } }),
    });
    expect(bad.status).toBe(400);
    const message = await messageOf(bad);
    expect(message).toContain("limits.cost_rate: must be a number of at least 0");
    expect(message).toContain('limits.cost_period: must be a positive duration such as "1m" or "1h"');
    const text = await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify({ consumer: "c", limits: { cost_rate: "5" } }) });
    expect(text.status).toBe(400);
    expect(await messageOf(text)).toContain("limits.cost_rate:");

    const created = await createKey(gw, { consumer: "c", limits: { cost_rate: 5 } });
    const shown = async () => ((await (await gw.request(`/-/keys/${created.id}`, { headers: ADMIN })).json()) as Json).limits;
    expect(await shown()).toEqual({ rate: 0, period: "1m", token_rate: 0, token_period: "1m", cost_rate: 5, cost_period: "24h" });
    const patched = await gw.request(`/-/keys/${created.id}`, {
      method: "PATCH",
      headers: ADMIN,
      body: JSON.stringify({ limits: { cost_rate: 0.5, cost_period: "1h" } }),
    });
    expect(patched.status).toBe(200);
    expect(await shown()).toMatchObject({ cost_rate: 0.5, cost_period: "1h" });
    const badPatch = await gw.request(`/-/keys/${created.id}`, {
      method: "PATCH",
      headers: ADMIN,
      body: JSON.stringify({ limits: { cost_rate: 0, cost_period: "0s" } }),
    });
    expect(badPatch.status).toBe(400);
    expect(await messageOf(badPatch)).toContain("limits.cost_period:");
  });

  describe("async jobs", () => {
    const ASYNC = `
server: { consumer_header: X-Consumer }
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: key-cost-secret } }
pricing:
  currency: EUR
  models:
    whisper: {per_second: 0.01}
services:
  - type: transcription
    model: whisper
    inference_url: http://backend
    operations: { transcribe: ["/transcribe"] }
    accepted_exts: [wav]
`;
    let gw: LimitsRuntime | undefined;
    afterEach(async () => {
      await gw?.close();
      gw = undefined;
    });

    const submit = (g: LimitsRuntime, key: string) =>
      g.request("/jobs/transcription", { method: "POST", body: jobForm(), headers: { authorization: `Bearer ${key}` } });

    async function runJob(g: LimitsRuntime, key: string, seconds: number): Promise<void> {
      expect((await submit(g, key)).status).toBe(202);
      await g.relayRound();
      await until(() => g.backend.waiting.length === 1, "the relay's backend call");
      g.clock.advance(seconds * 1000);
      g.backend.answerAll();
      await g.relayIdle();
    }

    it("counts a job's processing cost against the key it was submitted with, and reports it by key", async () => {
      const kv = await open(DB);
      if (kv) closing.push(kv);
      const g = (gw = await limitsRuntime(ASYNC, { plugins: [pricing, auth, admin], ...(kv ? { kv } : {}) }));
      const budgeted = await createKey(g, { consumer: "studio", limits: { cost_rate: 0.5, cost_period: "1h" } });
      const other = await createKey(g, { consumer: "studio" });
      await runJob(g, budgeted.key, 45);
      await until(async () => (await keyWindow(g.kv, budgeted.id)) === toNanos(0.45), "0.45 counted");
      await runJob(g, budgeted.key, 30);
      await until(async () => (await keyWindow(g.kv, budgeted.id)) === toNanos(0.75), "0.75 counted");

      const refused = await submit(g, budgeted.key);
      expect(refused.status).toBe(429);
      expect(await messageOf(refused)).toMatch(
        new RegExp(`^cost budget of API key "${budgeted.id}" used up: 0\\.75 of 0\\.5 EUR per 1h; retry in \\d+s, when the window resets$`),
      );
      // The consumer's other key is not held by it.
      await runJob(g, other.key, 2);

      const day = new Date(g.clock.now()).toISOString().slice(0, 10);
      await until(async () => (await report(g, "transcription", day, "key")).length === 2, "both keys in the report");
      expect(await report(g, "transcription", day, "key")).toEqual([
        { key: budgeted.id, requests: 2, tokens: 0, cost: 0.75 },
        { key: other.id, requests: 1, tokens: 0, cost: 0.02 },
      ]);
    });
  });
});

it("a key's cost budget holds across two replicas on one Redis", async () => {
  const clock = new ManualClock(NOW);
  const replicas: TestRuntime[] = [];
  const closing: Array<{ close(): Promise<void> }> = [];
  try {
    for (let i = 0; i < 2; i++) {
      const kv = await RedisKv.connect({ url: inject("redisUrl"), db: REPLICA_DB });
      closing.push(kv);
      const gw = await startTestRuntime(llmConfig(), builtinPlugins, { clock, kv });
      closing.push(gw);
      replicas.push(gw);
    }
    const key = await createKey(replicas[0], { consumer: "shared", limits: { cost_rate: 0.0002, cost_period: "1h" } });
    const other = await createKey(replicas[1], { consumer: "shared", limits: { cost_rate: 0.0002, cost_period: "1h" } });
    for (let i = 1; i <= 3; i++) {
      expect((await chat(replicas[i % 2], key.key, "gpt")).status).toBe(200);
      // Wait until the other replica's store connection sees the cost.
      await until(async () => (await keyWindow(replicas[(i + 1) % 2].kv, key.id)) === toNanos(0.000078) * i, `the key's window at ${78 * i} micro-dollars`);
    }
    const refused = await chat(replicas[0], key.key, "gpt");
    expect(refused.status).toBe(429);
    expect(await messageOf(refused)).toMatch(new RegExp(`^cost budget of API key "${key.id}" used up: 0\\.000234 of 0\\.0002 USD per 1h; `));
    expect((await chat(replicas[1], key.key, "gpt")).status).toBe(429);
    expect((await chat(replicas[1], other.key, "gpt")).status).toBe(200);
  } finally {
    for (const item of closing.reverse()) await item.close();
  }
});
