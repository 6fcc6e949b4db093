/**
 * The embedded store's memory cap on evictable keys (the response cache's answers,
 * `redis.embedded_cache_max_mb`): least recently used first, strings under the prefix only,
 * every removal path giving its bytes back.
 */
import { describe, expect, it } from "vitest";
import { ENTRY_OVERHEAD_BYTES } from "../../adapters/kv-memory/evictable.ts";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../core/clock.ts";
import { EVICTABLE_PREFIX } from "../../core/stores/kv.ts";

const VALUE = "v".repeat(1000);
/** What one `cache:n` key (n < 10) with VALUE counts for. */
const ONE = `${EVICTABLE_PREFIX}0`.length + VALUE.length + ENTRY_OVERHEAD_BYTES;

function capped(entries: number, clock = new ManualClock()): MemoryKv {
  return new MemoryKv(clock, { evictable: { prefix: EVICTABLE_PREFIX, maxBytes: entries * ONE } });
}

const key = (n: number) => `${EVICTABLE_PREFIX}${n}`;

describe("memory store: evictable keys under a cap", () => {
  it("drops the least recently used answer when a write goes over the cap", async () => {
    const kv = capped(3);
    for (const n of [1, 2, 3]) await kv.set(key(n), VALUE, 60_000);
    expect(kv.evictableUsage()).toMatchObject({ bytes: 3 * ONE, keys: 3 });
    // A read makes 1 the most recently used: 2 is now the oldest.
    expect(await kv.get(key(1))).toBe(VALUE);
    await kv.set(key(4), VALUE, 60_000);
    expect(await kv.get(key(2))).toBeNull();
    for (const n of [1, 3, 4]) expect(await kv.get(key(n))).toBe(VALUE);
    expect(kv.evictableUsage()).toEqual({ bytes: 3 * ONE, keys: 3, maxBytes: 3 * ONE, evicted: 1 });
  });

  it("keeps use order across many evictions, reads in between, and a store emptied and refilled", async () => {
    const kv = capped(3);
    const held = async () => {
      const kept: number[] = [];
      for (let n = 0; n < 10; n++) if ((await kv.exists(key(n))) === true) kept.push(n);
      return kept;
    };
    for (const n of [1, 2, 3]) await kv.set(key(n), VALUE);
    await kv.get(key(1)); // order: 2 3 1
    await kv.set(key(4), VALUE); // 2 goes: 3 1 4
    await kv.get(key(3)); // 1 4 3
    await kv.set(key(5), VALUE); // 1 goes: 4 3 5
    await kv.set(key(6), VALUE); // 4 goes: 3 5 6
    expect(await held()).toEqual([3, 5, 6]);
    await kv.del(key(3), key(5), key(6));
    for (const n of [7, 8, 9, 0]) await kv.set(key(n), VALUE); // 7 goes
    expect(await held()).toEqual([0, 8, 9]);
    expect(kv.evictableUsage()).toMatchObject({ keys: 3, evicted: 4 });
  });

  it("never drops keys outside the prefix, whatever their size", async () => {
    const kv = capped(1);
    await kv.set("job:1", VALUE.repeat(10));
    await kv.hset("usage:c1", { requests: "1" });
    await kv.set(key(1), VALUE);
    await kv.set(key(2), VALUE);
    expect(await kv.get("job:1")).toBe(VALUE.repeat(10));
    expect(await kv.hgetall("usage:c1")).toEqual({ requests: "1" });
    expect(await kv.get(key(1))).toBeNull();
    expect(await kv.get(key(2))).toBe(VALUE);
  });

  it("does not keep an answer bigger than the whole cap", async () => {
    const kv = capped(2);
    await kv.set(key(1), VALUE);
    await kv.set(key(2), VALUE.repeat(3));
    expect(await kv.get(key(2))).toBeNull();
    expect(await kv.get(key(1))).toBe(VALUE);
    // Not kept is not evicted: nothing made room for it.
    expect(kv.evictableUsage()).toMatchObject({ bytes: ONE, keys: 1, evicted: 0 });
  });

  it("gives the bytes back on overwrite, delete and expiry", async () => {
    const clock = new ManualClock();
    const kv = capped(3, clock);
    await kv.set(key(1), VALUE, 1_000);
    await kv.set(key(1), "short", 1_000);
    expect(kv.evictableUsage()?.bytes).toBe(key(1).length + 5 + ENTRY_OVERHEAD_BYTES);
    await kv.set(key(2), VALUE);
    expect(await kv.del(key(2))).toBe(1);
    expect(kv.evictableUsage()).toMatchObject({ bytes: key(1).length + 5 + ENTRY_OVERHEAD_BYTES, keys: 1 });
    clock.advance(1_000);
    // Any operation sweeps what expired.
    await kv.exists("anything");
    expect(kv.evictableUsage()).toMatchObject({ bytes: 0, keys: 0 });
    // The room freed by expiry is usable again: three answers fit.
    for (const n of [3, 4, 5]) await kv.set(key(n), VALUE, 60_000);
    for (const n of [3, 4, 5]) expect(await kv.get(key(n))).toBe(VALUE);
  });

  it("holds a steady total under a stream of distinct answers (what a cache-miss load does)", async () => {
    const kv = capped(50);
    for (let n = 0; n < 5_000; n++) await kv.set(`${EVICTABLE_PREFIX}llm:${n}`, VALUE, 3_600_000);
    const usage = kv.evictableUsage() ?? { keys: -1, evicted: -1 };
    expect(usage.keys).toBeLessThanOrEqual(50);
    expect(usage.keys).toBeGreaterThanOrEqual(45);
    expect(usage.evicted).toBe(5_000 - usage.keys);
    expect(await kv.get(`${EVICTABLE_PREFIX}llm:4999`)).toBe(VALUE);
    expect(await kv.get(`${EVICTABLE_PREFIX}llm:0`)).toBeNull();
  });

  it("has no cap without the option", async () => {
    const kv = new MemoryKv(new ManualClock());
    for (let n = 0; n < 100; n++) await kv.set(key(n), VALUE);
    expect(await kv.get(key(0))).toBe(VALUE);
    expect(kv.evictableUsage()).toBeUndefined();
  });
});
