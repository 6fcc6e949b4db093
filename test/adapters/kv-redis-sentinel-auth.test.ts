/**
 * Sentinel with passwords on both levels: the sentinels' own `requirepass`
 * (`redis.sentinel.password`) and the primary's (`redis.password`, the sentinels'
 * `auth-pass`), on a Sentinel set of this file's own (test/support/redis-topologies.ts).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { readyStatus } from "../support/gateway-traffic.ts";
import { type RedisSentinelProcesses, SENTINEL_MASTER, startRedisSentinel } from "../support/redis-topologies.ts";

const PASSWORD = "primary-secret";
const SENTINEL_PASSWORD = "sentinel-secret";

let set: RedisSentinelProcesses;
let echo: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  [set, echo] = await Promise.all([startRedisSentinel({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD }), startBackend({ kind: "echo" })]);
}, 60_000);
afterAll(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all([set?.stop(), echo?.close()]);
});

const target = (sentinelPassword?: string) => ({ masterName: SENTINEL_MASTER, sentinels: set.addrs, sentinelPassword });

describe("Sentinel with the sentinels' and the primary's passwords", () => {
  it("round-trips keys and runs an atomic op with both passwords", async () => {
    const kv = await RedisKv.connect({ sentinel: target(SENTINEL_PASSWORD), password: PASSWORD });
    try {
      await kv.set("auth:greeting", "hello", 60_000);
      expect(await kv.get("auth:greeting")).toBe("hello");
      expect((await kv.run(windowIncrement, ["auth:window"], [2, 60_000]))[0]).toBe(2);
    } finally {
      await kv.close();
    }
  });

  it("refuses a missing primary password with Redis's NOAUTH", async () => {
    await expect(RedisKv.connect({ sentinel: target(SENTINEL_PASSWORD), connectTimeoutMs: 3_000 })).rejects.toThrow(/NOAUTH Authentication required/);
  });

  // node-redis keeps retrying a sentinel that refuses AUTH, so the first PING times out; the
  // message carries the connection's own error, which says why.
  it("refuses a wrong sentinel password, saying WRONGPASS", async () => {
    await expect(RedisKv.connect({ sentinel: target("wrong"), password: PASSWORD, connectTimeoutMs: 3_000 })).rejects.toThrow(
      /Redis Sentinel primary "gwprimary" did not answer PING .*not connected: .*WRONGPASS/,
    );
  });

  it("a gateway with redis.sentinel.password and redis.password is ready and counts its limits there", async () => {
    const gw = await startGateway(`
server:
  consumer_header: X-Consumer
redis:
  password: ${PASSWORD}
  sentinel:
    master_name: ${SENTINEL_MASTER}
    addrs: ${JSON.stringify(set.addrs)}
    password: ${SENTINEL_PASSWORD}
object_store:
  endpoint: ${JSON.stringify(inject("s3Endpoint"))}
  access_key: S3RVER
  secret_key: S3RVER
  bucket: gateway-sentinel-auth
rate_limits:
  echo:
    "*": { rate: 1, period: 1m }
services:
  - type: echo
    model: echo
    inference_url: ${echo.url}
    operations: { run: [/v1/echo] }
`);
    running.push(gw);
    await waitUntil(async () => (await readyStatus(gw)) === 200, 20_000, () => gw.output().slice(-2000));
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${gw.url}/v1/echo`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-consumer": "auth-user" },
        body: "{}",
      });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 429]);
  });
});
