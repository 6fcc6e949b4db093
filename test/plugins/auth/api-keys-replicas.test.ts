/**
 * Two gateway replicas on one Redis (database 24): a key issued on one works on the other;
 * a lookup costs one store round trip on a miss and none on a hit; a key revoked or
 * disabled on one replica stops on that replica at once and on the other within
 * `auth.api_key.cache_ttl` (5 s here, driven by the injected clock).
 */
import { createClient } from "redis";
import { afterEach, beforeAll, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const DB = 24;
const ADMIN = { authorization: "Bearer admin-secret", "content-type": "application/json" };
const CONFIG = `
admin: { token: admin-secret }
auth: { mode: api_key, api_key: { secret: replica-secret, cache_ttl: 5s } }
services:
  - { type: chat, model: m, provider: chat_completions, inference_url: "http://127.0.0.1:9", operations: { chat: [/v1/chat/completions] } }
`;

beforeAll(async () => {
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  await client.flushDb();
  await client.close();
});

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

/** A replica on its own Redis connection, counting its reads of key hash entries. */
async function replica(clock: ManualClock): Promise<{ gw: TestRuntime; hashReads: () => number }> {
  const redis = await RedisKv.connect({ url: inject("redisUrl"), db: DB });
  open.push(redis);
  let reads = 0;
  const counted = new Proxy(redis, {
    get(target, property, receiver) {
      if (property !== "get") return Reflect.get(target, property, receiver) as unknown;
      return (key: string) => {
        if (key.startsWith("apikey:hash:")) reads++;
        return target.get(key);
      };
    },
  }) as KvStore;
  const gw = await startTestRuntime(CONFIG, builtinPlugins, { clock, kv: counted });
  open.push(gw);
  return { gw, hashReads: () => reads };
}

/** The status of an authenticated request that stops before any backend: GET /v1/models. */
const statusWith = async (gw: TestRuntime, key: string) => (await gw.request("/v1/models", { headers: { authorization: `Bearer ${key}` } })).status;

it("revoked or disabled on one replica: refused there at once, on the other within cache_ttl", async () => {
  const clock = new ManualClock(Date.now());
  const a = await replica(clock);
  const b = await replica(clock);
  const create = async () =>
    (await (await a.gw.request("/-/keys", { method: "POST", headers: ADMIN, body: JSON.stringify({ consumer: "team" }) })).json()) as {
      id: string;
      key: string;
    };

  const revoked = await create();
  expect(await statusWith(b.gw, revoked.key)).toBe(200);
  expect(b.hashReads()).toBe(1);
  expect(await statusWith(b.gw, revoked.key)).toBe(200);
  expect(b.hashReads()).toBe(1); // a hit: no round trip
  expect(await statusWith(a.gw, revoked.key)).toBe(200);
  expect((await a.gw.request(`/-/keys/${revoked.id}`, { method: "DELETE", headers: ADMIN })).status).toBe(200);
  expect(await statusWith(a.gw, revoked.key)).toBe(401);

  const disabled = await create();
  expect(await statusWith(b.gw, disabled.key)).toBe(200);
  await a.gw.request(`/-/keys/${disabled.id}`, { method: "PATCH", headers: ADMIN, body: JSON.stringify({ enabled: false }) });
  expect(await statusWith(a.gw, disabled.key)).toBe(401);

  // Replica b still has both in its cache, for less than cache_ttl.
  clock.advance(4_000);
  expect(await statusWith(b.gw, revoked.key)).toBe(200);
  clock.advance(1_000);
  const res = await b.gw.request("/v1/models", { headers: { "x-api-key": revoked.key } });
  expect(res.status).toBe(401);
  expect(((await res.json()) as { error: { message: string } }).error.message).toContain("revoked");
  expect(await statusWith(b.gw, disabled.key)).toBe(401);
});
