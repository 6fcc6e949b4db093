/**
 * In-flight coalescing (`llm.coalesce`), in-process with a fake backend that holds its answers:
 * identical cacheable requests that arrive while the first is at the backend get its answer
 * (only one the cache would have served them), on both stores (the cache, and so the reads
 * before coalescing, may be in Redis).
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { createLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import llmProxy from "../../../plugins/llm-proxy/index.ts";
import providerChatCompletions from "../../../plugins/provider-chat-completions/index.ts";
import providers from "../../../plugins/providers/index.ts";
import responseCache from "../../../plugins/response-cache/index.ts";
import syncProxy from "../../../plugins/sync-proxy/index.ts";
import { waitUntil } from "../../support/gateway-process.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const stores: { name: string; open: () => Promise<KvStore> }[] = [
  { name: "memory", open: async () => new MemoryKv() },
  { name: "redis", open: async () => await RedisKv.connect({ url: inject("redisUrl") }) },
];

const config = (coalesce: boolean) => `
llm:
  coalesce: ${coalesce}
services:
  - { type: chat, model: m, provider: chat_completions, inference_url: "http://backend.test", response_cache_ttl: 60, operations: { chat: [/v1/chat/completions] } }
`;

/**
 * A backend that holds every call until `release()`; `failFirst` makes the first call answer
 * 500, `streams` makes every call answer an event stream (a lenient backend that streams when
 * the request did not ask it to).
 */
function heldBackend(failFirst = false, streams = false) {
  let calls = 0;
  const held: Array<() => void> = [];
  const fetch: typeof globalThis.fetch = async () => {
    const n = ++calls;
    await new Promise<void>((resolve) => held.push(resolve));
    if (failFirst && n === 1) {
      return new Response(JSON.stringify({ error: { message: "boom", type: "server_error" } }), {
        status: 500,
        headers: { "content-type": "application/json" },
      });
    }
    if (streams) return new Response(`data: {"n":${n}}\n\ndata: [DONE]\n\n`, { headers: { "content-type": "text/event-stream" } });
    const answer = {
      id: `c${n}`,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: `answer ${n}` }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    };
    return new Response(JSON.stringify(answer), { headers: { "content-type": "application/json" } });
  };
  return {
    fetch,
    get calls() {
      return calls;
    },
    release() {
      for (const resolve of held.splice(0)) resolve();
    },
  };
}

describe.each(stores)("in-flight coalescing: $name store", ({ open }) => {
  let store: KvStore;
  const runtimes: TestRuntime[] = [];
  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    await store.close();
  });
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });

  async function setUp(coalesce: boolean, failFirst = false, streams = false) {
    const backend = heldBackend(failFirst, streams);
    const logged: string[] = [];
    const log = createLogger({ write: (line) => logged.push(line), repeatWindowMs: 0 });
    // Counts finished store reads: once all are in, every request has reached its cache lookup.
    let reads = 0;
    const kv = new Proxy(store, {
      get(target, prop) {
        if (prop === "get") {
          return async (key: string) => {
            const value = await target.get(key);
            reads++;
            return value;
          };
        }
        const value: unknown = Reflect.get(target, prop);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const started = await startTestRuntime(config(coalesce), [syncProxy, providers, providerChatCompletions, responseCache, llmProxy], {
      kv,
      fetch: backend.fetch,
      log,
    });
    runtimes.push(started);
    const call = (body: unknown) =>
      started.runtime.handle(
        new Request("http://gateway.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      );
    /** Sends the bodies at once, holds the backend until every lookup is in, then lets it answer. */
    const concurrently = async (bodies: unknown[], backendCalls: number) => {
      const responses = bodies.map((body) => call(body));
      await waitUntil(() => reads >= bodies.length && backend.calls >= backendCalls);
      // From now on answer every call, including those of followers whose leader failed.
      const release = setInterval(() => backend.release(), 5);
      backend.release();
      try {
        const answered = await Promise.all(responses);
        return await Promise.all(answered.map(async (r) => ({ status: r.status, cache: r.headers.get("x-cache"), text: await r.text() })));
      } finally {
        clearInterval(release);
      }
    };
    return { backend, call, concurrently, metrics: started.metrics, logged };
  }

  // Unique per test: the Redis store is shared by the tests, and a cached answer would be a hit.
  const question = () => ({ model: "m", messages: [{ role: "user", content: crypto.randomUUID() }] });

  it("5 identical requests make 1 backend call; all get its answer, 4 counted as coalesced", async () => {
    const { backend, concurrently, metrics } = await setUp(true);
    const body = question();
    const answers = await concurrently([body, body, body, body, body], 1);
    expect(backend.calls).toBe(1);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers[0].text).toContain("answer 1");
    expect(answers.map((a) => a.cache).sort()).toEqual(["HIT", "HIT", "HIT", "HIT", "MISS"]);
    const text = await metrics.text();
    expect(text).toContain('svc_cache_coalesced_total{service_type="chat",model="m"} 4');
    expect(text).toContain('svc_cache_misses_total{service_type="chat",model="m"} 1');
    // Followers are served like cache hits: only the leader's request and tokens are counted.
    expect(text).toContain('svc_llm_requests_total{service_type="chat",model="m",backend_model="m",provider="chat_completions",user_type="",status="200"} 1');
  });

  it("when the leader fails, the waiting requests call the backend themselves", async () => {
    const { backend, concurrently, metrics } = await setUp(true, true);
    const body = question();
    const answers = await concurrently([body, body, body], 1);
    expect(backend.calls).toBe(3);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 500]);
    expect(await metrics.text()).not.toContain("svc_cache_coalesced_total{");
  });

  it("an event stream a backend sent to a plain request is neither handed to the waiting requests nor stored", async () => {
    const { backend, concurrently, logged } = await setUp(true, false, true);
    const body = question();
    const answers = await concurrently([body, body, body], 1);
    // The leader's client gets what its backend sent; the others call the backend themselves.
    expect(backend.calls).toBe(3);
    expect(answers.map((a) => a.cache)).toEqual(["MISS", "MISS", "MISS"]);
    expect(answers.map((a) => a.text).sort()).toEqual([1, 2, 3].map((n) => `data: {"n":${n}}\n\ndata: [DONE]\n\n`));
    // Every fill was refused (it runs once the response is sent): a later request goes to the backend too.
    const refusals = () => logged.filter((line) => line.includes('"response_cache_not_stored"')).length;
    await waitUntil(() => refusals() === 3);
    const later = await concurrently([body], 4);
    expect(later.map((a) => a.cache)).toEqual(["MISS"]);
    expect(backend.calls).toBe(4);
  });

  it("different bodies do not coalesce", async () => {
    const { backend, concurrently } = await setUp(true);
    const answers = await concurrently([question(), question(), question()], 3);
    expect(backend.calls).toBe(3);
    expect(new Set(answers.map((a) => a.text)).size).toBe(3);
  });

  it("llm.coalesce: false sends each identical request to the backend", async () => {
    const { backend, concurrently, metrics } = await setUp(false);
    const body = question();
    const answers = await concurrently([body, body, body, body, body], 5);
    expect(backend.calls).toBe(5);
    expect(answers.map((a) => a.cache)).toEqual(["MISS", "MISS", "MISS", "MISS", "MISS"]);
    expect(await metrics.text()).not.toContain("svc_cache_coalesced_total{");
  });
});
