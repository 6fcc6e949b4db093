/**
 * `auth.api_key.stale_if_error`: while the key store cannot answer, a key a replica found in
 * it before is served from its cache that long past `cache_ttl`; with the default `0s` such a
 * request is refused (503) once the cache expired. A key revoked meanwhile (by a replica that
 * still reaches the store) is refused from the first request after the store answers again.
 * Two stores: the memory store behind a wrapper that fails this replica's reads, and a real
 * redis-server of the test's own frozen with SIGSTOP. Cache ages run on the test's clock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type RunningServer, startRedis } from "../../support/servers.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };
const CACHE_TTL_MS = 5_000;

const config = (staleIfError: string) => `
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: test-secret, cache_ttl: 5s, stale_if_error: ${staleIfError} } }
services:
  - { type: chat, model: small-1, provider: chat_completions, inference_url: "http://127.0.0.1:9", operations: { chat: [/v1/chat/completions] } }
`;

const running: TestRuntime[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.close()));
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Replica {
  gw: TestRuntime;
  /** Every log line, parsed. */
  lines: Array<Record<string, unknown>>;
}

async function replica(staleIfError: string, kv: KvStore, clock: ManualClock): Promise<Replica> {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const gw = await startTestRuntime(config(staleIfError), builtinPlugins, { clock, kv, log });
  running.push(gw);
  return { gw, lines };
}

const listModels = (gw: TestRuntime, key: string) => gw.request("/v1/models", { headers: { authorization: `Bearer ${key}` } });
const statusOf = async (response: Response) => {
  await response.body?.cancel();
  return response.status;
};

async function createKey(gw: TestRuntime, consumer: string): Promise<{ id: string; key: string }> {
  const created = await gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify({ consumer }) });
  expect(created.status).toBe(201);
  return (await created.json()) as { id: string; key: string };
}

async function revoke(gw: TestRuntime, id: string): Promise<void> {
  expect((await gw.request(`/-/keys/${id}`, { method: "DELETE", headers: ADMIN })).status).toBe(200);
}

/** Polls `check` until it holds or `timeoutMs` passed; the last value for the message. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!check(last) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    last = await read();
  }
  expect(check(last), `last: ${String(last)}`).toBe(true);
  return last;
}

describe("a store that fails one replica's reads (memory store)", () => {
  /** The shared memory store as one replica sees it: its reads fail while `down` is set. */
  function partitioned(memory: MemoryKv): { kv: KvStore; setDown(down: boolean): void } {
    let down = false;
    const kv = new Proxy(memory, {
      get(target, property, receiver) {
        if (down && (property === "get" || property === "mget")) return () => Promise.reject(new Error("store unreachable"));
        return Reflect.get(target, property, receiver);
      },
    });
    return { kv, setDown: (value) => (down = value) };
  }

  async function setup(staleIfError: string) {
    const clock = new ManualClock(Date.now());
    const memory = new MemoryKv(clock);
    cleanups.push(() => memory.close());
    const link = partitioned(memory);
    const served = await replica(staleIfError, link.kv, clock);
    const admin = await replica(staleIfError, memory, clock);
    return { clock, link, served, admin };
  }

  it("with the default 0s, a key whose cache entry expired is refused (503) while the store fails", async () => {
    const { clock, link, served, admin } = await setup("0s");
    const { key } = await createKey(admin.gw, "team-a");
    expect(await statusOf(await listModels(served.gw, key))).toBe(200);
    link.setDown(true);
    clock.advance(CACHE_TTL_MS - 1);
    expect(await statusOf(await listModels(served.gw, key))).toBe(200);
    clock.advance(1);
    const refused = await listModels(served.gw, key);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("API keys cannot be checked right now");
  });

  it("with 60s, a known key is served 60 s past its cache expiry; unknown keys are not; a revocation made meanwhile applies once the store answers", async () => {
    const { clock, link, served, admin } = await setup("60s");
    const { id, key } = await createKey(admin.gw, "team-a");
    const never = await createKey(admin.gw, "team-b");
    expect(await statusOf(await listModels(served.gw, key))).toBe(200);

    link.setDown(true);
    // Revoked by a replica that still reaches the store: this one cannot know yet.
    await revoke(admin.gw, id);
    clock.advance(CACHE_TTL_MS);
    expect(await statusOf(await listModels(served.gw, key))).toBe(200);
    expect(served.lines.some((line) => line.event === "api_key_served_stale")).toBe(true);
    clock.advance(60_000 - 1);
    expect(await statusOf(await listModels(served.gw, key))).toBe(200);
    // A key this replica never looked up is not let in on the store's silence.
    expect(await statusOf(await listModels(served.gw, never.key))).toBe(503);
    // The window is over: refused until the store answers.
    clock.advance(1);
    expect(await statusOf(await listModels(served.gw, key))).toBe(503);

    link.setDown(false);
    const answer = await listModels(served.gw, key);
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { error: { message: string } }).error.message).toContain("revoked API key");
  });
});

describe("a frozen Redis (SIGSTOP)", () => {
  let redis: RunningServer;
  let frozen = false;

  async function setup() {
    redis = await startRedis();
    cleanups.push(async () => {
      if (frozen) process.kill(redis.pid!, "SIGCONT");
      frozen = false;
      await redis.stop();
    });
    const clock = new ManualClock(Date.now());
    const connect = async () => {
      const kv = await RedisKv.connect({ url: redis.url, commandTimeoutMs: 200, maxReconnectDelayMs: 200 });
      cleanups.push(() => kv.close());
      return kv;
    };
    const [strict, lenient, admin] = [
      await replica("0s", await connect(), clock),
      await replica("60s", await connect(), clock),
      await replica("0s", await connect(), clock),
    ];
    return { clock, strict, lenient, admin };
  }

  it("0s refuses once the cache expired, 60s keeps serving the known key; after SIGCONT the revocation made before applies", async () => {
    const { clock, strict, lenient, admin } = await setup();
    const { id, key } = await createKey(admin.gw, "team-a");
    expect(await statusOf(await listModels(strict.gw, key))).toBe(200);
    expect(await statusOf(await listModels(lenient.gw, key))).toBe(200);
    // Revoked elsewhere while both replicas hold the key in their caches.
    await revoke(admin.gw, id);

    process.kill(redis.pid!, "SIGSTOP");
    frozen = true;
    clock.advance(CACHE_TTL_MS);
    expect(await statusOf(await listModels(strict.gw, key))).toBe(503);
    expect(await statusOf(await listModels(lenient.gw, key))).toBe(200);
    clock.advance(30_000);
    expect(await statusOf(await listModels(lenient.gw, key))).toBe(200);

    process.kill(redis.pid!, "SIGCONT");
    frozen = false;
    // Once Redis answers again (the client reconnects on its own), the revocation applies.
    await until(async () => await statusOf(await listModels(lenient.gw, key)), (status) => status === 401);
    expect(await statusOf(await listModels(strict.gw, key))).toBe(401);
  });
});
