/**
 * The KvStore contract, run against both implementations: the memory store (driven by
 * a manual clock) and Redis (the suite's redis-server, several connections so races
 * are real). Every test works under its own random key prefix and flushes nothing.
 *
 * Redis time cannot be driven, so expiry itself is checked on the memory store and
 * Redis TTLs are checked as bounded `pttl` values.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { RedisKv, redisUrlFromAddr } from "../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../core/clock.ts";
import {
  claimDue,
  compareAndDelete,
  compareAndExpire,
  semaphoreAcquire,
  semaphoreRelease,
  windowIncrement,
  windowIncrementFloat,
} from "../../core/stores/atomic-ops.ts";
import type { AtomicOp, KvStore } from "../../core/stores/kv.ts";
import { SENTINEL_MASTER } from "../support/redis-topologies.ts";
import { freePort, type RunningServer, startRedis } from "../support/servers.ts";

interface Harness {
  /** Handles onto the same data. Redis gets one connection each, so concurrent calls really race. */
  stores: KvStore[];
  /**
   * A test's key prefix. On a cluster it is a hash tag, so the keys one multi-key call
   * touches share a slot (as the gateway's own keys do, core/stores/hash-tags.ts).
   */
  prefix?: () => string;
  close(): Promise<void>;
}

const CONNECTIONS = 4;

const factories: { name: string; open: () => Promise<Harness> }[] = [
  {
    name: "memory",
    open: async () => {
      const kv = new MemoryKv(new ManualClock());
      return { stores: [kv], close: () => kv.close() };
    },
  },
  {
    name: "redis",
    open: async () => {
      const url = inject("redisUrl");
      const stores = await Promise.all(Array.from({ length: CONNECTIONS }, () => RedisKv.connect({ url })));
      return {
        stores,
        close: async () => {
          await Promise.all(stores.map((store) => store.close()));
        },
      };
    },
  },
  {
    // The suite's 3-primary Redis Cluster (test/support/global-setup.ts).
    name: "redis cluster",
    open: async () => {
      const stores = await Promise.all(Array.from({ length: CONNECTIONS }, () => RedisKv.connect({ cluster: { nodes: inject("redisClusterAddrs") } })));
      return {
        stores,
        prefix: () => `{kvtest:${crypto.randomUUID()}}:`,
        close: async () => {
          await Promise.all(stores.map((store) => store.close()));
        },
      };
    },
  },
  {
    // The suite's Sentinel set: a primary, a replica and three sentinels.
    name: "redis sentinel",
    open: async () => {
      const stores = await Promise.all(
        Array.from({ length: CONNECTIONS }, () => RedisKv.connect({ sentinel: { masterName: SENTINEL_MASTER, sentinels: inject("redisSentinelAddrs") } })),
      );
      return {
        stores,
        close: async () => {
          await Promise.all(stores.map((store) => store.close()));
        },
      };
    },
  },
];

const MINUTE = 60_000;

/** A TTL the store reports for a key set with `ttlMs` a moment ago. */
function expectTtl(actual: number, ttlMs: number): void {
  expect(actual).toBeGreaterThan(ttlMs - 10_000);
  expect(actual).toBeLessThanOrEqual(ttlMs);
}

/** Pages through a whole scan, checking the cursor protocol on the way. */
async function scanAll(kv: KvStore, prefix: string, count: number): Promise<{ keys: string[]; pages: number }> {
  const keys: string[] = [];
  let cursor = "0";
  let pages = 0;
  do {
    const page = await kv.scan(prefix, cursor, count);
    keys.push(...page.keys);
    cursor = page.cursor;
    pages++;
    expect(pages).toBeLessThan(10_000);
  } while (cursor !== "0");
  return { keys, pages };
}

describe.each(factories)("KvStore contract: $name", ({ open }) => {
  let harness: Harness;
  let kv: KvStore;
  let p: string;

  beforeAll(async () => {
    harness = await open();
    kv = harness.stores[0];
  });
  afterAll(async () => {
    await harness.close();
  });
  beforeEach(() => {
    p = harness.prefix?.() ?? `kvtest:${crypto.randomUUID()}:`;
  });

  /** Spreads calls over the harness's connections. */
  const on = (i: number): KvStore => harness.stores[i % harness.stores.length];

  describe("strings and keys", () => {
    it("gets what was set, null when absent", async () => {
      expect(await kv.get(`${p}missing`)).toBeNull();
      await kv.set(`${p}a`, "1");
      await kv.set(`${p}a`, "2");
      expect(await kv.get(`${p}a`)).toBe("2");
      expect(await kv.exists(`${p}a`)).toBe(true);
      expect(await kv.exists(`${p}missing`)).toBe(false);
    });

    it("mget returns values in order, null for absent and non-string keys", async () => {
      await kv.set(`${p}a`, "A");
      await kv.set(`${p}c`, "C");
      await kv.push(`${p}list`, "x", "tail");
      expect(await kv.mget([`${p}a`, `${p}b`, `${p}list`, `${p}c`])).toEqual(["A", null, null, "C"]);
      expect(await kv.mget([])).toEqual([]);
    });

    it("set with a TTL expires the key; a plain set clears the TTL", async () => {
      await kv.set(`${p}a`, "v", MINUTE);
      expectTtl(await kv.pttl(`${p}a`), MINUTE);
      await kv.set(`${p}a`, "w");
      expect(await kv.pttl(`${p}a`)).toBe(-1);
    });

    it("rejects a non-positive or fractional TTL on set", async () => {
      await expect(kv.set(`${p}a`, "v", 0)).rejects.toThrow(/invalid expire time/);
      await expect(kv.set(`${p}a`, "v", 1.5)).rejects.toThrow(/not an integer/);
      await expect(kv.setIfAbsent(`${p}a`, "v", -5)).rejects.toThrow(/invalid expire time/);
      expect(await kv.exists(`${p}a`)).toBe(false);
    });

    it("setIfAbsent sets only an absent key, with its TTL", async () => {
      expect(await kv.setIfAbsent(`${p}a`, "first", MINUTE)).toBe(true);
      expect(await kv.setIfAbsent(`${p}a`, "second", MINUTE)).toBe(false);
      expect(await kv.get(`${p}a`)).toBe("first");
      expectTtl(await kv.pttl(`${p}a`), MINUTE);
      expect(await kv.setIfAbsent(`${p}b`, "x")).toBe(true);
      expect(await kv.pttl(`${p}b`)).toBe(-1);
    });

    it("setIfAbsent racing: exactly one of 50 concurrent callers wins", async () => {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => on(i).setIfAbsent(`${p}lock`, `owner-${i}`, MINUTE)),
      );
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      expect(winners).toHaveLength(1);
      expect(await kv.get(`${p}lock`)).toBe(`owner-${winners[0]}`);
    });

    it("del removes any type and counts what existed", async () => {
      await kv.set(`${p}s`, "1");
      await kv.hset(`${p}h`, { f: "1" });
      await kv.push(`${p}l`, "1", "tail");
      await kv.zadd(`${p}z`, 1, "m");
      expect(await kv.del(`${p}s`, `${p}h`, `${p}l`, `${p}z`, `${p}missing`)).toBe(4);
      expect(await kv.del()).toBe(0);
      for (const key of ["s", "h", "l", "z"]) expect(await kv.exists(`${p}${key}`)).toBe(false);
    });

    it("incrBy counts from zero, keeps the TTL and rejects non-integers", async () => {
      expect(await kv.incrBy(`${p}n`, 5)).toBe(5);
      expect(await kv.incrBy(`${p}n`, -7)).toBe(-2);
      expect(await kv.get(`${p}n`)).toBe("-2");
      await kv.pexpire(`${p}n`, MINUTE);
      await kv.incrBy(`${p}n`, 1);
      expectTtl(await kv.pttl(`${p}n`), MINUTE);

      await kv.set(`${p}text`, "abc");
      await expect(kv.incrBy(`${p}text`, 1)).rejects.toThrow(/not an integer/);
      await kv.set(`${p}float`, "1.5");
      await expect(kv.incrBy(`${p}float`, 1)).rejects.toThrow(/not an integer/);
      await expect(kv.incrBy(`${p}n`, 1.5)).rejects.toThrow(/not an integer/);
      expect(await kv.get(`${p}float`)).toBe("1.5");
    });

    it("reads a counter as the string Redis answers, and counts on from what set wrote", async () => {
      expect(await kv.incrBy(`${p}n`, 3)).toBe(3);
      await kv.set(`${p}written`, "41");
      expect(await kv.incrBy(`${p}written`, 1)).toBe(42);
      expect(await kv.mget([`${p}written`, `${p}n`, `${p}missing`])).toEqual(["42", "3", null]);
      expect(await kv.hincrByFloat(`${p}counts`, "whole", 3)).toBe(3);
      expect(await kv.hincrBy(`${p}counts`, "whole", 1)).toBe(4);
      expect(await kv.hincrBy(`${p}counts`, "a", 7)).toBe(7);
      expect(await kv.hget(`${p}counts`, "a")).toBe("7");
      expect(await kv.hgetall(`${p}counts`)).toEqual({ whole: "4", a: "7" });
    });

    it("pexpire and pttl follow the Redis rules", async () => {
      expect(await kv.pttl(`${p}missing`)).toBe(-2);
      expect(await kv.pexpire(`${p}missing`, MINUTE)).toBe(false);
      expect(await kv.exists(`${p}missing`)).toBe(false);

      await kv.set(`${p}a`, "v");
      expect(await kv.pttl(`${p}a`)).toBe(-1);
      expect(await kv.pexpire(`${p}a`, MINUTE)).toBe(true);
      expectTtl(await kv.pttl(`${p}a`), MINUTE);
      expect(await kv.pexpire(`${p}a`, 2 * MINUTE)).toBe(true);
      expectTtl(await kv.pttl(`${p}a`), 2 * MINUTE);

      // A TTL already in the past deletes the key, as Redis does.
      expect(await kv.pexpire(`${p}a`, 0)).toBe(true);
      expect(await kv.exists(`${p}a`)).toBe(false);
      expect(await kv.pttl(`${p}a`)).toBe(-2);
    });

    it("pexpire applies to every type", async () => {
      await kv.hset(`${p}h`, { f: "1" });
      await kv.push(`${p}l`, "1", "tail");
      await kv.zadd(`${p}z`, 1, "m");
      for (const key of ["h", "l", "z"]) {
        expect(await kv.pexpire(`${p}${key}`, MINUTE)).toBe(true);
        expectTtl(await kv.pttl(`${p}${key}`), MINUTE);
      }
    });

    it("operations against the wrong type fail like WRONGTYPE and change nothing", async () => {
      await kv.push(`${p}list`, "x", "tail");
      await kv.set(`${p}str`, "s");
      await expect(kv.get(`${p}list`)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.incrBy(`${p}list`, 1)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.push(`${p}str`, "x", "head")).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.hset(`${p}list`, { f: "v" })).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.hgetall(`${p}str`)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zadd(`${p}list`, 1, "m")).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.zrangeByScore(`${p}str`, 0, 1)).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.lrange(`${p}str`, 0, -1)).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.lrange(`${p}list`, 0, -1)).toEqual(["x"]);
      expect(await kv.get(`${p}str`)).toBe("s");
    });
  });

  describe("hashes", () => {
    it("hset counts new fields; hget and hgetall read them back", async () => {
      expect(await kv.hset(`${p}h`, { a: "1", b: "2" })).toBe(2);
      expect(await kv.hset(`${p}h`, { b: "3", c: "4" })).toBe(1);
      expect(await kv.hset(`${p}h`, {})).toBe(0);
      expect(await kv.hget(`${p}h`, "b")).toBe("3");
      expect(await kv.hget(`${p}h`, "zz")).toBeNull();
      expect(await kv.hget(`${p}missing`, "a")).toBeNull();
      expect(await kv.hgetall(`${p}h`)).toEqual({ a: "1", b: "3", c: "4" });
      expect(await kv.hgetall(`${p}missing`)).toEqual({});
    });

    it("hdel removes fields, and the key with its last field", async () => {
      await kv.hset(`${p}h`, { a: "1", b: "2" });
      expect(await kv.hdel(`${p}h`, "a")).toBe(1);
      expect(await kv.hdel(`${p}h`, "a")).toBe(0);
      expect(await kv.exists(`${p}h`)).toBe(true);
      expect(await kv.hdel(`${p}h`, "b")).toBe(1);
      expect(await kv.exists(`${p}h`)).toBe(false);
    });

    it("hincrBy and hincrByFloat count from zero and reject bad values", async () => {
      expect(await kv.hincrBy(`${p}h`, "n", 3)).toBe(3);
      expect(await kv.hincrBy(`${p}h`, "n", -1)).toBe(2);
      expect(await kv.hincrByFloat(`${p}h`, "f", 1.5)).toBe(1.5);
      expect(await kv.hincrByFloat(`${p}h`, "f", 0.25)).toBe(1.75);
      expect(await kv.hincrByFloat(`${p}h`, "n", 0.5)).toBe(2.5);
      expect(await kv.hgetall(`${p}h`)).toEqual({ n: "2.5", f: "1.75" });
      expect(await kv.hget(`${p}h`, "f")).toBe("1.75");
      await expect(kv.hincrBy(`${p}h`, "f", 1)).rejects.toThrow(/not an integer/);
      await kv.hset(`${p}h`, { t: "abc" });
      await expect(kv.hincrByFloat(`${p}h`, "t", 1)).rejects.toThrow(/not a (valid )?float/);
    });
  });

  describe("lists", () => {
    it("pushes and pops at both ends", async () => {
      expect(await kv.push(`${p}l`, "b", "tail")).toBe(1);
      expect(await kv.push(`${p}l`, "c", "tail")).toBe(2);
      expect(await kv.push(`${p}l`, "a", "head")).toBe(3);
      expect(await kv.lrange(`${p}l`, 0, -1)).toEqual(["a", "b", "c"]);
      expect(await kv.llen(`${p}l`)).toBe(3);
      expect(await kv.pop(`${p}l`, "head")).toBe("a");
      expect(await kv.pop(`${p}l`, "tail")).toBe("c");
      expect(await kv.pop(`${p}l`, "tail")).toBe("b");
      expect(await kv.pop(`${p}l`, "tail")).toBeNull();
      expect(await kv.exists(`${p}l`)).toBe(false);
      expect(await kv.llen(`${p}l`)).toBe(0);
    });

    it("lrange takes inclusive, negative and out-of-range indexes like Redis", async () => {
      for (const v of ["a", "b", "c", "d", "e"]) await kv.push(`${p}l`, v, "tail");
      expect(await kv.lrange(`${p}l`, 1, 3)).toEqual(["b", "c", "d"]);
      expect(await kv.lrange(`${p}l`, -2, -1)).toEqual(["d", "e"]);
      expect(await kv.lrange(`${p}l`, -100, 1)).toEqual(["a", "b"]);
      expect(await kv.lrange(`${p}l`, 3, 100)).toEqual(["d", "e"]);
      expect(await kv.lrange(`${p}l`, 3, 1)).toEqual([]);
      expect(await kv.lrange(`${p}l`, 5, 10)).toEqual([]);
      expect(await kv.lrange(`${p}missing`, 0, -1)).toEqual([]);
    });

    it("lrem removes from the head, the tail or everywhere", async () => {
      const fill = async (key: string) => {
        for (const v of ["x", "a", "x", "b", "x"]) await kv.push(key, v, "tail");
      };
      await fill(`${p}1`);
      expect(await kv.lrem(`${p}1`, 2, "x")).toBe(2);
      expect(await kv.lrange(`${p}1`, 0, -1)).toEqual(["a", "b", "x"]);
      await fill(`${p}2`);
      expect(await kv.lrem(`${p}2`, -1, "x")).toBe(1);
      expect(await kv.lrange(`${p}2`, 0, -1)).toEqual(["x", "a", "x", "b"]);
      await fill(`${p}3`);
      expect(await kv.lrem(`${p}3`, 0, "x")).toBe(3);
      expect(await kv.lrange(`${p}3`, 0, -1)).toEqual(["a", "b"]);
      expect(await kv.lrem(`${p}3`, 0, "zz")).toBe(0);
      expect(await kv.lrem(`${p}3`, 0, "a")).toBe(1);
      expect(await kv.lrem(`${p}3`, 0, "b")).toBe(1);
      expect(await kv.exists(`${p}3`)).toBe(false);
      expect(await kv.lrem(`${p}missing`, 0, "a")).toBe(0);
    });

    it("move pops from one list and pushes onto another, at the ends asked", async () => {
      for (const v of ["a", "b", "c"]) await kv.push(`${p}src`, v, "tail");
      expect(await kv.move(`${p}src`, `${p}dst`, "head", "tail")).toBe("a");
      expect(await kv.move(`${p}src`, `${p}dst`, "tail", "head")).toBe("c");
      expect(await kv.lrange(`${p}dst`, 0, -1)).toEqual(["c", "a"]);
      expect(await kv.move(`${p}src`, `${p}dst`, "head", "head")).toBe("b");
      expect(await kv.lrange(`${p}dst`, 0, -1)).toEqual(["b", "c", "a"]);
      expect(await kv.exists(`${p}src`)).toBe(false);
      expect(await kv.move(`${p}src`, `${p}dst`, "head", "tail")).toBeNull();
      expect(await kv.move(`${p}src`, `${p}other`, "head", "tail")).toBeNull();
      expect(await kv.exists(`${p}other`)).toBe(false);
    });

    it("move onto the same list rotates it and keeps its TTL", async () => {
      for (const v of ["a", "b", "c"]) await kv.push(`${p}l`, v, "tail");
      expect(await kv.move(`${p}l`, `${p}l`, "head", "tail")).toBe("a");
      expect(await kv.lrange(`${p}l`, 0, -1)).toEqual(["b", "c", "a"]);
      await kv.del(`${p}l`);
      await kv.push(`${p}one`, "only", "tail");
      await kv.pexpire(`${p}one`, MINUTE);
      expect(await kv.move(`${p}one`, `${p}one`, "tail", "head")).toBe("only");
      expect(await kv.lrange(`${p}one`, 0, -1)).toEqual(["only"]);
      expectTtl(await kv.pttl(`${p}one`), MINUTE);
    });

    it("move onto a non-list fails without popping", async () => {
      await kv.push(`${p}src`, "a", "tail");
      await kv.set(`${p}str`, "s");
      await expect(kv.move(`${p}src`, `${p}str`, "head", "tail")).rejects.toThrow(/WRONGTYPE/);
      expect(await kv.lrange(`${p}src`, 0, -1)).toEqual(["a"]);
    });

    it("concurrent moves hand each element to exactly one mover", async () => {
      const items = Array.from({ length: 60 }, (_, i) => `job-${i}`);
      for (const item of items) await kv.push(`${p}queue`, item, "tail");
      const moved = await Promise.all(
        Array.from({ length: 80 }, (_, i) => on(i).move(`${p}queue`, `${p}working`, "head", "tail")),
      );
      const got = moved.filter((v): v is string => v !== null);
      expect(got.sort()).toEqual([...items].sort());
      expect(moved.filter((v) => v === null)).toHaveLength(20);
      expect(await kv.llen(`${p}working`)).toBe(60);
    });
  });

  describe("sorted sets", () => {
    it("zadd adds or rescores; zscore, zcard and zrem follow", async () => {
      expect(await kv.zadd(`${p}z`, 2, "b")).toBe(1);
      expect(await kv.zadd(`${p}z`, 1.5, "a")).toBe(1);
      expect(await kv.zadd(`${p}z`, 3, "b")).toBe(0);
      expect(await kv.zscore(`${p}z`, "b")).toBe(3);
      expect(await kv.zscore(`${p}z`, "a")).toBe(1.5);
      expect(await kv.zscore(`${p}z`, "nope")).toBeNull();
      expect(await kv.zscore(`${p}missing`, "a")).toBeNull();
      expect(await kv.zcard(`${p}z`)).toBe(2);
      expect(await kv.zcard(`${p}missing`)).toBe(0);
      expect(await kv.zrem(`${p}z`, "a")).toBe(1);
      expect(await kv.zrem(`${p}z`, "a")).toBe(0);
      expect(await kv.zrem(`${p}z`, "b")).toBe(1);
      expect(await kv.exists(`${p}z`)).toBe(false);
    });

    it("zrangeByScore is inclusive, ascending by score then member, and honours the limit", async () => {
      const members: [number, string][] = [[5, "e"], [1, "a"], [3, "c2"], [3, "c1"], [2, "b"], [9, "z"], [-1, "neg"]];
      for (const [score, member] of members) await kv.zadd(`${p}z`, score, member);
      expect(await kv.zrangeByScore(`${p}z`, 1, 5)).toEqual(["a", "b", "c1", "c2", "e"]);
      expect(await kv.zrangeByScore(`${p}z`, 2, 3, 2)).toEqual(["b", "c1"]);
      expect(await kv.zrangeByScore(`${p}z`, -Infinity, Infinity)).toEqual(["neg", "a", "b", "c1", "c2", "e", "z"]);
      expect(await kv.zrangeByScore(`${p}z`, -Infinity, 2.5, 100)).toEqual(["neg", "a", "b"]);
      expect(await kv.zrangeByScore(`${p}z`, 6, 8)).toEqual([]);
      expect(await kv.zrangeByScore(`${p}z`, 1, 5, 0)).toEqual([]);
      expect(await kv.zrangeByScore(`${p}missing`, 0, 10)).toEqual([]);
    });

    it("keeps large millisecond timestamps exact", async () => {
      const at = Date.UTC(2026, 0, 1, 12, 30, 45, 123);
      await kv.zadd(`${p}z`, at, "m");
      expect(await kv.zscore(`${p}z`, "m")).toBe(at);
      expect(await kv.zrangeByScore(`${p}z`, at, at)).toEqual(["m"]);
      expect(await kv.zrangeByScore(`${p}z`, at + 1, Infinity)).toEqual([]);
    });
  });

  describe("scan", () => {
    it("pages through exactly the keys under a prefix, glob characters included", async () => {
      // Unescaped, this prefix would be a glob matching the decoys below.
      const prefix = `${p}a*b?[c]\\:`;
      const expected = Array.from({ length: 250 }, (_, i) => `${prefix}${i}`);
      await Promise.all(expected.map((key, i) => on(i).set(key, "v")));
      await kv.hset(`${prefix}hash`, { f: "v" });
      await kv.zadd(`${prefix}zset`, 1, "m");
      expected.push(`${prefix}hash`, `${prefix}zset`);
      const decoys = [`${p}aXXbYc:1`, `${p}a*b?c:2`, `${p}a*b?[c]`, `${p}b:1`];
      await Promise.all(decoys.map((key) => kv.set(key, "decoy")));

      const { keys, pages } = await scanAll(kv, prefix, 20);
      expect(pages).toBeGreaterThan(1);
      expect(new Set(keys)).toEqual(new Set(expected));
    });

    it("returns every key present throughout, even when others are deleted mid-scan", async () => {
      const keys = Array.from({ length: 100 }, (_, i) => `${p}k${String(i).padStart(3, "0")}`);
      await Promise.all(keys.map((key, i) => on(i).set(key, "v")));
      const seen = new Set<string>();
      let cursor = "0";
      let first = true;
      do {
        const page = await kv.scan(p, cursor, 10);
        for (const key of page.keys) seen.add(key);
        cursor = page.cursor;
        if (first) {
          // Delete every third key not yet seen; the rest must still be found.
          await kv.del(...keys.filter((key, i) => i % 3 === 0 && !seen.has(key)));
          first = false;
        }
      } while (cursor !== "0");
      const kept = keys.filter((key, i) => i % 3 !== 0 || seen.has(key));
      for (const key of kept) expect(seen).toContain(key);
      for (const key of seen) expect(key.startsWith(p)).toBe(true);
    });

    it("finishes with cursor 0 when nothing matches", async () => {
      const { keys } = await scanAll(kv, `${p}nothing:`, 50);
      expect(keys).toEqual([]);
    });
  });

  describe("atomic operations", () => {
    it("run passes keys and args through and returns the op's reply", async () => {
      // A script text the server has never seen forces the NOSCRIPT -> EVAL path first.
      const echo: AtomicOp<(string | number)[]> = {
        name: `echo-${p}`,
        lua: `-- ${p}\nreturn {KEYS[1], ARGV[1], ARGV[2], #KEYS, 42}`,
        js: (_data, keys, args) => [keys[0], args[0], args[1], keys.length, 42],
      };
      expect(await kv.run(echo, [`${p}k`], [7, "x"])).toEqual([`${p}k`, "7", "x", 1, 42]);
      expect(await kv.run(echo, [`${p}k`], [1.5, ""])).toEqual([`${p}k`, "1.5", "", 1, 42]);
    });

    it("an op failing inside rejects the run", async () => {
      await kv.hset(`${p}h`, { f: "1" });
      await expect(kv.run(windowIncrement, [`${p}h`], [1, MINUTE])).rejects.toThrow(/WRONGTYPE/);
      await expect(kv.run(semaphoreAcquire, [`${p}h`], [10, MINUTE])).rejects.toThrow(/WRONGTYPE/);
    });

    describe("windowIncrement", () => {
      it("counts and starts the window on the first increment", async () => {
        const [first, ttl1] = await kv.run(windowIncrement, [`${p}w`], [1, MINUTE]);
        expect(first).toBe(1);
        expect(ttl1).toBe(MINUTE);
        expectTtl(await kv.pttl(`${p}w`), MINUTE);
        const [second, ttl2] = await kv.run(windowIncrement, [`${p}w`], [4, MINUTE]);
        expect(second).toBe(5);
        expectTtl(ttl2, MINUTE);
        expect(await kv.get(`${p}w`)).toBe("5");
      });

      it("never extends a running window", async () => {
        await kv.run(windowIncrement, [`${p}w`], [1, MINUTE]);
        // Shorten the window as if most of it had passed; later increments must keep it.
        expect(await kv.pexpire(`${p}w`, 5_000)).toBe(true);
        const [value, ttl] = await kv.run(windowIncrement, [`${p}w`], [1, MINUTE]);
        expect(value).toBe(2);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(5_000);
        const pttl = await kv.pttl(`${p}w`);
        expect(pttl).toBeGreaterThan(0);
        expect(pttl).toBeLessThanOrEqual(5_000);
      });

      it("gives a counter that lost its TTL a window", async () => {
        await kv.set(`${p}w`, "10");
        const [value, ttl] = await kv.run(windowIncrement, [`${p}w`], [1, MINUTE]);
        expect(value).toBe(11);
        expect(ttl).toBe(MINUTE);
        expectTtl(await kv.pttl(`${p}w`), MINUTE);
      });

      it("is exact under concurrency", async () => {
        const replies = await Promise.all(
          Array.from({ length: 100 }, (_, i) => on(i).run(windowIncrement, [`${p}w`], [1, MINUTE])),
        );
        expect(replies.map(([v]) => v).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
        expect(await kv.get(`${p}w`)).toBe("100");
      });

      it("rejects a fractional increment", async () => {
        await expect(kv.run(windowIncrement, [`${p}w`], [0.5, MINUTE])).rejects.toThrow(/not an integer/);
      });
    });

    describe("windowIncrementFloat", () => {
      it("adds fractions and sets the window once", async () => {
        const [first, ttl1] = await kv.run(windowIncrementFloat, [`${p}w`], [0.5, MINUTE]);
        expect(Number(first)).toBe(0.5);
        expect(ttl1).toBe(MINUTE);
        await kv.pexpire(`${p}w`, 5_000);
        const [second, ttl2] = await kv.run(windowIncrementFloat, [`${p}w`], [1.25, MINUTE]);
        expect(Number(second)).toBe(1.75);
        expect(ttl2).toBeLessThanOrEqual(5_000);
        expect(ttl2).toBeGreaterThan(0);
        expect(Number(await kv.get(`${p}w`))).toBe(1.75);
      });
    });

    describe("semaphore", () => {
      it("acquires up to the limit, then refuses without changing anything", async () => {
        for (let i = 1; i <= 3; i++) expect(await kv.run(semaphoreAcquire, [`${p}s`], [3, MINUTE])).toBe(i);
        expect(await kv.run(semaphoreAcquire, [`${p}s`], [3, MINUTE])).toBe(-1);
        expect(await kv.get(`${p}s`)).toBe("3");
        expectTtl(await kv.pttl(`${p}s`), MINUTE);
      });

      it("release counts down, never below zero, deleting the key at zero", async () => {
        await kv.run(semaphoreAcquire, [`${p}s`], [5, MINUTE]);
        await kv.run(semaphoreAcquire, [`${p}s`], [5, MINUTE]);
        expect(await kv.run(semaphoreRelease, [`${p}s`], [])).toBe(1);
        expectTtl(await kv.pttl(`${p}s`), MINUTE);
        expect(await kv.run(semaphoreRelease, [`${p}s`], [])).toBe(0);
        expect(await kv.exists(`${p}s`)).toBe(false);
        expect(await kv.run(semaphoreRelease, [`${p}s`], [])).toBe(0);
        expect(await kv.exists(`${p}s`)).toBe(false);
        expect(await kv.run(semaphoreAcquire, [`${p}s`], [5, MINUTE])).toBe(1);
      });

      it("racing: 100 concurrent acquires with limit 10 give exactly 10 slots", async () => {
        const replies = await Promise.all(
          Array.from({ length: 100 }, (_, i) => on(i).run(semaphoreAcquire, [`${p}s`], [10, MINUTE])),
        );
        const granted = replies.filter((n) => n !== -1);
        expect(granted.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(replies.filter((n) => n === -1)).toHaveLength(90);
        expect(await kv.get(`${p}s`)).toBe("10");

        const released = await Promise.all(
          Array.from({ length: 15 }, (_, i) => on(i).run(semaphoreRelease, [`${p}s`], [])),
        );
        expect(released.filter((n) => n === 0).length).toBeGreaterThanOrEqual(6);
        expect(await kv.exists(`${p}s`)).toBe(false);
      });
    });

    describe("claimDue", () => {
      it("takes due members lowest score first, at most max, and leaves the rest", async () => {
        for (let i = 1; i <= 30; i++) await kv.zadd(`${p}due`, i, `m${String(i).padStart(2, "0")}`);
        expect(await kv.run(claimDue, [`${p}due`], [20, 5])).toEqual(["m01", "m02", "m03", "m04", "m05"]);
        expect(await kv.zcard(`${p}due`)).toBe(25);
        const rest = await kv.run(claimDue, [`${p}due`], [20, 100]);
        expect(rest).toEqual(Array.from({ length: 15 }, (_, i) => `m${String(i + 6).padStart(2, "0")}`));
        expect(await kv.run(claimDue, [`${p}due`], [20, 100])).toEqual([]);
        expect(await kv.zcard(`${p}due`)).toBe(10);
        expect(await kv.run(claimDue, [`${p}missing`], [20, 100])).toEqual([]);
      });

      it("with a lease, keeps the members it takes, due again at the lease's end", async () => {
        for (let i = 1; i <= 4; i++) await kv.zadd(`${p}due`, i, `m${i}`);
        expect(await kv.run(claimDue, [`${p}due`], [2, 100, 50])).toEqual(["m1", "m2"]);
        expect(await kv.zcard(`${p}due`)).toBe(4);
        expect(await kv.zscore(`${p}due`, "m1")).toBe(50);
        expect(await kv.zscore(`${p}due`, "m2")).toBe(50);
        // Not due again until the lease ends: nobody else takes them meanwhile.
        expect(await kv.run(claimDue, [`${p}due`], [49, 100, 60])).toEqual(["m3", "m4"]);
        expect(await kv.run(claimDue, [`${p}due`], [50, 100, 70])).toEqual(["m1", "m2"]);
      });

      it("racing claimers never share a member, miss none due and take none in the future", async () => {
        const now = 1_000_000;
        const due = Array.from({ length: 150 }, (_, i) => `due-${i}`);
        const future = Array.from({ length: 50 }, (_, i) => `future-${i}`);
        await Promise.all([
          ...due.map((m, i) => on(i).zadd(`${p}sched`, now - i, m)),
          ...future.map((m, i) => on(i).zadd(`${p}sched`, now + 1 + i, m)),
        ]);
        await kv.zadd(`${p}sched`, now, "exactly-now");
        due.push("exactly-now");

        const claimer = async (store: KvStore): Promise<string[]> => {
          const mine: string[] = [];
          for (;;) {
            const batch = await store.run(claimDue, [`${p}sched`], [now, 7]);
            if (batch.length === 0) return mine;
            mine.push(...batch);
          }
        };
        const results = await Promise.all(Array.from({ length: 4 }, (_, i) => claimer(on(i))));
        const all = results.flat();
        expect(all).toHaveLength(new Set(all).size);
        expect(new Set(all)).toEqual(new Set(due));
        expect(await kv.zcard(`${p}sched`)).toBe(50);
        expect(await kv.zrangeByScore(`${p}sched`, -Infinity, Infinity)).toEqual(future);
      });
    });

    describe("leases", () => {
      it("compareAndDelete deletes only while the token matches", async () => {
        await kv.set(`${p}lease`, "me", MINUTE);
        expect(await kv.run(compareAndDelete, [`${p}lease`], ["someone-else"])).toBe(0);
        expect(await kv.get(`${p}lease`)).toBe("me");
        expect(await kv.run(compareAndDelete, [`${p}lease`], ["me"])).toBe(1);
        expect(await kv.exists(`${p}lease`)).toBe(false);
        expect(await kv.run(compareAndDelete, [`${p}lease`], ["me"])).toBe(0);
      });

      it("compareAndExpire extends only while the token matches", async () => {
        await kv.set(`${p}lease`, "me", 5_000);
        expect(await kv.run(compareAndExpire, [`${p}lease`], ["other", MINUTE])).toBe(0);
        expect(await kv.pttl(`${p}lease`)).toBeLessThanOrEqual(5_000);
        expect(await kv.run(compareAndExpire, [`${p}lease`], ["me", MINUTE])).toBe(1);
        expectTtl(await kv.pttl(`${p}lease`), MINUTE);
        expect(await kv.run(compareAndExpire, [`${p}missing`], ["me", MINUTE])).toBe(0);
      });
    });
  });

  it("ping answers", async () => {
    await expect(kv.ping()).resolves.toBeUndefined();
  });
});

describe("MemoryKv expiry (manual clock)", () => {
  let clock: ManualClock;
  let kv: MemoryKv;

  beforeEach(() => {
    clock = new ManualClock();
    kv = new MemoryKv(clock);
  });

  it("a key lives exactly its TTL", async () => {
    await kv.set("a", "v", 1_000);
    clock.advance(999);
    expect(await kv.get("a")).toBe("v");
    expect(await kv.pttl("a")).toBe(1);
    clock.advance(1);
    expect(await kv.get("a")).toBeNull();
    expect(await kv.exists("a")).toBe(false);
    expect(await kv.pttl("a")).toBe(-2);
    expect(await kv.pexpire("a", 1_000)).toBe(false);
    expect(await kv.setIfAbsent("a", "again")).toBe(true);
  });

  it("every type expires, and an expired key can be reused as another type", async () => {
    await kv.hset("h", { f: "1" });
    await kv.push("l", "x", "tail");
    await kv.zadd("z", 1, "m");
    for (const key of ["h", "l", "z"]) await kv.pexpire(key, 500);
    clock.advance(500);
    expect(await kv.hgetall("h")).toEqual({});
    expect(await kv.llen("l")).toBe(0);
    expect(await kv.zcard("z")).toBe(0);
    expect(await kv.move("l", "dst", "head", "tail")).toBeNull();
    await kv.set("h", "now a string");
    expect(await kv.get("h")).toBe("now a string");
  });

  it("incrBy keeps the TTL running; set without TTL removes it", async () => {
    await kv.set("n", "1", 1_000);
    clock.advance(400);
    await kv.incrBy("n", 1);
    expect(await kv.pttl("n")).toBe(600);
    await kv.set("n", "5");
    clock.advance(10_000);
    expect(await kv.get("n")).toBe("5");
  });

  it("windowIncrement starts a fresh window after the old one ends", async () => {
    expect(await kv.run(windowIncrement, ["w"], [1, 1_000])).toEqual([1, 1_000]);
    clock.advance(400);
    expect(await kv.run(windowIncrement, ["w"], [1, 1_000])).toEqual([2, 600]);
    clock.advance(600);
    expect(await kv.run(windowIncrement, ["w"], [1, 1_000])).toEqual([1, 1_000]);
  });

  it("semaphore slots free themselves after the safety TTL", async () => {
    for (let i = 0; i < 2; i++) await kv.run(semaphoreAcquire, ["s"], [2, 1_000]);
    expect(await kv.run(semaphoreAcquire, ["s"], [2, 1_000])).toBe(-1);
    clock.advance(1_000);
    expect(await kv.run(semaphoreAcquire, ["s"], [2, 1_000])).toBe(1);
  });

  it("a lease that expired cannot be released by its old holder's token after someone else took it", async () => {
    await kv.set("lease", "old", 1_000);
    clock.advance(1_000);
    expect(await kv.setIfAbsent("lease", "new", 1_000)).toBe(true);
    expect(await kv.run(compareAndDelete, ["lease"], ["old"])).toBe(0);
    expect(await kv.get("lease")).toBe("new");
  });

  it("scan skips expired keys", async () => {
    await kv.set("k:live", "v");
    await kv.set("k:short", "v", 10);
    await kv.hset("k:hash", { f: "v" });
    await kv.pexpire("k:hash", 10);
    clock.advance(10);
    const { keys } = await scanAll(kv, "k:", 1);
    expect(keys).toEqual(["k:live"]);
  });

  it("scan survives its snapshot being evicted by many unfinished scans", async () => {
    for (let i = 0; i < 10; i++) await kv.set(`k:${i}`, "v");
    const first = await kv.scan("k:", "0", 3);
    for (let i = 0; i < 40; i++) await kv.scan("k:", "0", 1);
    const seen = [...first.keys];
    let cursor = first.cursor;
    while (cursor !== "0") {
      const page = await kv.scan("k:", cursor, 3);
      seen.push(...page.keys);
      cursor = page.cursor;
    }
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `k:${i}`));
  });

  it("rejects a JS twin reply Redis could not return", async () => {
    const fractional: AtomicOp<number> = { name: "fractional", lua: "return 1.5", js: () => 1.5 };
    const holey: AtomicOp<(string | null)[]> = { name: "holey", lua: "return {'a', false, 'b'}", js: () => ["a", null, "b"] };
    await expect(kv.run(fractional, [], [])).rejects.toThrow(/not an integer/);
    await expect(kv.run(holey, [], [])).rejects.toThrow(/null inside an array/);
  });
});

describe("RedisKv connection handling", () => {
  const started: RunningServer[] = [];
  const opened: KvStore[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((kv) => kv.close()));
    await Promise.all(started.splice(0).map((server) => server.stop()));
  });

  it("accepts host:port and redis:// addresses", async () => {
    expect(redisUrlFromAddr("127.0.0.1:6380")).toBe("redis://127.0.0.1:6380");
    expect(redisUrlFromAddr("cache.internal")).toBe("redis://cache.internal:6379");
    expect(redisUrlFromAddr("[::1]:7000")).toBe("redis://[::1]:7000");
    expect(redisUrlFromAddr("redis://:secret@host:1/2")).toBe("redis://:secret@host:1/2");
    expect(redisUrlFromAddr("rediss://host")).toBe("rediss://host");
    expect(() => redisUrlFromAddr("http://host:6379")).toThrow(/unsupported/);
    expect(() => redisUrlFromAddr("a b:1")).toThrow(/invalid/);

    const url = new URL(inject("redisUrl"));
    const kv = new RedisKv({ url: `${url.hostname}:${url.port}` });
    opened.push(kv);
    await kv.ping();
  });

  it("selects the configured database", async () => {
    const key = `kvtest:${crypto.randomUUID()}`;
    const db1 = await RedisKv.connect({ url: inject("redisUrl"), db: 1 });
    const db0 = await RedisKv.connect({ url: inject("redisUrl") });
    opened.push(db1, db0);
    await db1.set(key, "in-db-1", MINUTE);
    expect(await db0.get(key)).toBeNull();
    expect(await db1.get(key)).toBe("in-db-1");
  });

  it("fails fast when nothing listens, instead of hanging", async () => {
    const port = await freePort();
    const kv = new RedisKv({ url: `127.0.0.1:${port}` });
    opened.push(kv);
    const start = Date.now();
    await expect(kv.get("x")).rejects.toThrow(/unavailable/);
    await expect(kv.run(semaphoreAcquire, ["x"], [1, 1_000])).rejects.toThrow(/unavailable/);
    expect(Date.now() - start).toBeLessThan(5_000);
    await expect(RedisKv.connect({ url: `redis://127.0.0.1:${port}` })).rejects.toThrow(/unavailable/);
  });

  it("fails fast while Redis is down and recovers by itself when it returns", async () => {
    const server = await startRedis();
    started.push(server);
    const kv = await RedisKv.connect({ url: server.url, maxReconnectDelayMs: 200 });
    opened.push(kv);
    await kv.set("k", "before");
    await server.stop();
    started.pop();

    const down = Date.now();
    await pollUntil(async () => {
      await expect(kv.get("k")).rejects.toThrow();
    });
    expect(Date.now() - down).toBeLessThan(5_000);

    started.push(await startRedis(server.port));
    // The restarted server is empty (no persistence): the point is that commands work again.
    await pollUntil(async () => {
      expect(await kv.get("k")).toBeNull();
    });
    expect(await kv.run(semaphoreAcquire, ["s"], [1, 1_000])).toBe(1);
  });
});

/** Retries an assertion until it passes or the deadline is reached. */
async function pollUntil(check: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}
