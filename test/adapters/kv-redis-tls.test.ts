/**
 * `redis.tls` against a redis-server that speaks only TLS (test/support/redis-tls.ts: a
 * throwaway CA made with openssl, a server certificate naming TLS_SERVER_NAME and no IP).
 * The store works over TLS with `ca_file` and `server_name`; a certificate checked against
 * the address (no `server_name`) or against another CA is refused, and says why.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { readyStatus } from "../support/gateway-traffic.ts";
import { startTlsRedis, TLS_SERVER_NAME, type TlsRedis } from "../support/redis-tls.ts";

let redis: TlsRedis;
let echo: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  [redis, echo] = await Promise.all([startTlsRedis(), startBackend({ kind: "echo" })]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all([redis?.stop(), echo?.close()]);
});

const pem = (file: string) => readFileSync(file, "utf8");

describe("the Redis store over TLS", () => {
  it("round-trips keys and runs an atomic op with the CA and server name", async () => {
    const kv = await RedisKv.connect({ url: redis.addr, tls: { ca: pem(redis.caFile), serverName: TLS_SERVER_NAME } });
    try {
      await kv.set("tls:greeting", "hello", 60_000);
      expect(await kv.get("tls:greeting")).toBe("hello");
      await kv.hset("tls:hash", { a: "1" });
      expect(await kv.hgetall("tls:hash")).toEqual({ a: "1" });
      expect((await kv.run(windowIncrement, ["tls:window"], [3, 60_000]))[0]).toBe(3);
    } finally {
      await kv.close();
    }
  });

  it("checks the certificate against server_name: without it, 127.0.0.1 is not a name the certificate holds", async () => {
    await expect(RedisKv.connect({ url: redis.addr, tls: { ca: pem(redis.caFile) }, connectTimeoutMs: 3_000 })).rejects.toThrow(
      /does not match certificate's altnames/,
    );
  });

  it("refuses a server whose certificate another CA signed, saying so", async () => {
    await expect(
      RedisKv.connect({ url: redis.addr, tls: { ca: pem(redis.wrongCaFile), serverName: TLS_SERVER_NAME }, connectTimeoutMs: 3_000 }),
    ).rejects.toThrow(/Redis at 127\.0\.0\.1:\d+ unavailable \(self-signed certificate in certificate chain\)/);
  });
});

function gatewayYaml(caFile: string): string {
  return `
server:
  consumer_header: X-Consumer
redis:
  addr: ${redis.addr}
  tls:
    enabled: true
    ca_file: ${JSON.stringify(caFile)}
    server_name: ${TLS_SERVER_NAME}
object_store:
  endpoint: ${JSON.stringify(inject("s3Endpoint"))}
  access_key: S3RVER
  secret_key: S3RVER
  bucket: gateway-tls
rate_limits:
  echo:
    "*": { rate: 2, period: 1m }
services:
  - type: echo
    model: echo
    inference_url: ${echo.url}
    operations: { run: [/v1/echo] }
`;
}

describe("a gateway on a TLS Redis (redis.tls)", () => {
  const call = (gw: GatewayProcess) =>
    fetch(`${gw.url}/v1/echo`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": "tls-user" },
      body: JSON.stringify({ model: "echo" }),
    });

  it("is ready and counts its rate limit in Redis over TLS", async () => {
    const gw = await startGateway(gatewayYaml(redis.caFile));
    running.push(gw);
    await waitUntil(async () => (await readyStatus(gw)) === 200, 15_000, () => gw.output().slice(-2000));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await call(gw);
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    // rate 2: the third is refused, which only a working limit store can tell.
    expect(statuses).toEqual([200, 200, 429]);
    const kv = await RedisKv.connect({ url: redis.addr, tls: { ca: pem(redis.caFile), serverName: TLS_SERVER_NAME } });
    try {
      expect((await kv.scan("rl:", "0", 1000)).keys.some((key) => key.includes("tls-user"))).toBe(true);
    } finally {
      await kv.close();
    }
  });

  it("with the wrong CA: not ready, and the log says the certificate was refused", async () => {
    const gw = await startGateway(gatewayYaml(redis.wrongCaFile));
    running.push(gw);
    await waitUntil(() => gw.output().includes("self-signed certificate in certificate chain"), 15_000, () => gw.output().slice(-2000));
    expect(await readyStatus(gw)).toBe(503);
    expect(gw.output()).toMatch(/kv_store_(connection_error|unavailable_at_start)/);
  });
});
