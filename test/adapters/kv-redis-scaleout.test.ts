/**
 * What the Redis store does differently on a Cluster and on Sentinel, on the suite's own
 * 3-primary cluster and Sentinel set (test/support/global-setup.ts): keys stored under their
 * owner's hash tag, SCAN over every primary, slots computed as Redis computes them, and the
 * config refusing an ambiguous or incomplete Redis section.
 */
import { afterAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { keySlot } from "../../adapters/kv-redis/slot.ts";
import { loadConfig } from "../../plugins/config.ts";
import { nodeCommand, SENTINEL_MASTER, startRedisCluster } from "../support/redis-topologies.ts";

const opened: RedisKv[] = [];
afterAll(async () => {
  await Promise.all(opened.map((kv) => kv.close()));
});

async function cluster(): Promise<RedisKv> {
  const kv = await RedisKv.connect({ cluster: { nodes: inject("redisClusterAddrs") } });
  opened.push(kv);
  return kv;
}

const ports = () => inject("redisClusterAddrs").map((addr) => Number(addr.split(":")[1]));

describe("Redis Cluster", () => {
  it("computes each key's slot as the cluster does, hash tags included", async () => {
    const keys = ["a", "job:1", "{jobs}relay:whisper", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{}x", "ünïcode:κλειδί"];
    for (const key of keys) expect(keySlot(key), key).toBe(Number(await nodeCommand(ports()[0], ["CLUSTER", "KEYSLOT", key])));
  });

  it("stores the job store's keys under one hash tag, and each consumer's limit windows under their own", async () => {
    const kv = await cluster();
    const id = crypto.randomUUID();
    await kv.set(`job:${id}`, "record", 60_000);
    await kv.set(`rl:echo:${id}`, "1", 60_000);
    expect(await kv.get(`job:${id}`)).toBe("record");
    // Read back through a plain node connection, following the slot to its primary.
    const owner = async (name: string) => {
      for (const port of ports()) {
        const value = await nodeCommand(port, ["GET", name]).catch(() => undefined);
        if (value !== undefined) return value;
      }
      return undefined;
    };
    expect(await owner(`{jobs}job:${id}`)).toBe("record");
    expect(await owner(`{c:${id}}rl:echo:${id}`)).toBe("1");
  });

  it("scans every primary: keys of many slots under one prefix all come back, once each", async () => {
    const kv = await cluster();
    const prefix = `scan:${crypto.randomUUID()}:`;
    const expected = Array.from({ length: 300 }, (_, i) => `${prefix}${i}`);
    await Promise.all(expected.map((key) => kv.set(key, "v", 60_000)));
    await kv.set(`other:${crypto.randomUUID()}`, "decoy", 60_000);
    // Spread over every primary, so a scan of one node would miss some.
    const perNode = await Promise.all(ports().map(async (port) => ((await nodeCommand(port, ["KEYS", `${prefix}*`])) as string[]).length));
    expect(perNode.every((n) => n > 0)).toBe(true);
    const seen: string[] = [];
    let cursor = "0";
    let pages = 0;
    do {
      const page = await kv.scan(prefix, cursor, 50);
      seen.push(...page.keys);
      cursor = page.cursor;
      expect(++pages).toBeLessThan(1_000);
    } while (cursor !== "0");
    expect(seen.sort()).toEqual([...expected].sort());
  });

  it("scans tagged names by their plain key prefix", async () => {
    const kv = await cluster();
    const model = `m-${crypto.randomUUID()}`;
    await kv.push(`relay:${model}:processing`, "id", "tail");
    const found: string[] = [];
    let cursor = "0";
    do {
      const page = await kv.scan(`relay:${model}`, cursor, 500);
      found.push(...page.keys);
      cursor = page.cursor;
    } while (cursor !== "0");
    expect(found).toEqual([`relay:${model}:processing`]);
    await kv.del(`relay:${model}:processing`);
  });

  it("authenticates to every node with redis.password; without it the cluster is unavailable, saying NOAUTH", async () => {
    const secured = await startRedisCluster(3, { password: "s3cret" });
    try {
      const kv = await RedisKv.connect({ cluster: { nodes: secured.addrs }, password: "s3cret" });
      opened.push(kv);
      const prefix = `auth:${crypto.randomUUID()}:`;
      await Promise.all(Array.from({ length: 30 }, (_, i) => kv.set(`${prefix}${i}`, "v", 60_000)));
      expect(await kv.get(`${prefix}7`)).toBe("v");
      await kv.ping();
      await expect(RedisKv.connect({ cluster: { nodes: secured.addrs }, connectTimeoutMs: 1_000 })).rejects.toThrow(
        /Redis Cluster at .* unavailable \(NOAUTH Authentication required/,
      );
    } finally {
      await Promise.all(opened.splice(0).map((kv) => kv.close()));
      await secured.stop();
    }
  }, 30_000);

  it("a multi-key call across owners fails with Redis's CROSSSLOT error", async () => {
    const kv = await cluster();
    await expect(kv.mget([`rl:echo:${crypto.randomUUID()}`, `rl:echo:${crypto.randomUUID()}x`])).rejects.toThrow(/CROSSSLOT/);
  });
});

describe("Redis Sentinel", () => {
  it("reaches the primary the sentinels name, with plain key names", async () => {
    const kv = await RedisKv.connect({ sentinel: { masterName: SENTINEL_MASTER, sentinels: inject("redisSentinelAddrs") } });
    opened.push(kv);
    const key = `job:${crypto.randomUUID()}`;
    await kv.set(key, "v", 60_000);
    const primary =
      (await nodeCommand(Number(inject("redisSentinelAddrs")[0].split(":")[1]), ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_MASTER])) as string[];
    expect(await nodeCommand(Number(primary[1]), ["GET", key])).toBe("v");
  });

  // node-redis's Sentinel client leases its primary connection per burst of commands: a command
  // that arrived while the lease was being taken waited for the burst to end, and under steady
  // load a burst never ends (CI: a reply missing for over redis.command_timeout, then ~10 s of
  // refusals). Commands started in one turn, then a chain that always keeps one in flight.
  it("answers every command under steady overlapping load, none waits for a lull", async () => {
    const kv = await RedisKv.connect({ sentinel: { masterName: SENTINEL_MASTER, sentinels: inject("redisSentinelAddrs") }, commandTimeoutMs: 60_000 });
    opened.push(kv);
    const key = `load:${crypto.randomUUID()}`;
    const order: string[] = [];
    const sameTurn = Array.from({ length: 5 }, (_, i) => kv.get(`${key}:${i}`).then(() => order.push(`same-turn ${i}`)));
    let chain: Promise<unknown> = Promise.resolve();
    for (let step = 0; step < 200; step++) {
      const previous = chain;
      chain = kv.get(`${key}:chain`).then(() => order.push(`chain ${step}`));
      // The next one is sent before the previous reply is handled: one always in flight.
      await Promise.race([previous, new Promise((resolve) => setImmediate(resolve))]);
    }
    await Promise.all([chain, ...sameTurn]);
    const lastSameTurn = Math.max(...[0, 1, 2, 3, 4].map((i) => order.indexOf(`same-turn ${i}`)));
    expect(lastSameTurn, order.slice(0, 12).join(", ")).toBeLessThan(order.indexOf("chain 20"));
  });

  it("fails fast with a clear error when no sentinel answers", async () => {
    const kv = new RedisKv({ sentinel: { masterName: "nobody", sentinels: ["127.0.0.1:1"] }, connectTimeoutMs: 200 });
    opened.push(kv);
    await expect(kv.get("x")).rejects.toThrow(/Redis Sentinel primary "nobody" (unavailable|did not answer)/);
  });
});

describe("config", () => {
  const problems = (redis: string): string => {
    try {
      loadConfig(`redis:\n${redis}\n`, {});
      return "";
    } catch (error) {
      return (error as Error).message;
    }
  };

  it("takes one of addr, sentinel and cluster, each complete", () => {
    expect(problems(`  cluster: { addrs: ["10.0.0.1:7000"] }`)).toBe("");
    expect(problems(`  sentinel: { master_name: main, addrs: ["10.0.0.1:26379", "[::1]:26379"] }\n  tls: { enabled: true }`)).toBe("");
    expect(problems(`  addr: "r:6379"\n  cluster: { addrs: ["10.0.0.1:7000"] }`)).toContain(
      "redis: redis.addr and redis.cluster.addrs are both set; set exactly one",
    );
    expect(problems(`  sentinel: { addrs: ["10.0.0.1:26379"] }`)).toContain("redis.sentinel.master_name: required with redis.sentinel.addrs");
    expect(problems(`  cluster: { addrs: ["10.0.0.1"] }`)).toContain('redis.cluster.addrs: "10.0.0.1" is not host:port');
    // One environment variable can carry the list; an unset one leaves no entry.
    expect(problems(`  cluster: { addrs: ["10.0.0.1:7000, 10.0.0.2:7000", ""] }`)).toBe("");
    expect(problems(`  addr: "r:6379"\n  cluster: { addrs: [""] }\n  sentinel: { addrs: [""] }`)).toBe("");
    expect(problems(`  cluster: { addrs: ["10.0.0.1:7000"] }\n  db: 3`)).toContain("redis.db: 3 with redis.cluster: a Redis Cluster has only database 0");
  });
});
