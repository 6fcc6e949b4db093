/**
 * The limits plugin's atomic operations on both stores: the memory store's JS twin and the
 * Lua script on the suite's redis-server (several connections, so races are real). Keys
 * live under a random prefix per test.
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";
import { limitsAdmit, semaphoreAcquireFirst, slotAcquire, slotConvert, slotExtend, windowPeek } from "../../../plugins/limits/ops.ts";

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 0, 1);

describe.each(opsStores)("limits ops: $name", ({ open }) => {
  let all: KvStore[];
  let kv: KvStore;
  const k = keysPerTest("limitsops", open, (opened) => {
    all = opened;
    kv = opened[0];
  });

  describe("slotAcquire / slotConvert", () => {
    it("takes slots up to the limit and then refuses without changing anything", async () => {
      expect(await kv.run(slotAcquire, [k("s")], [NOW, 2, "r1", NOW + MINUTE])).toEqual([1, 1]);
      expect(await kv.run(slotAcquire, [k("s")], [NOW, 2, "r2", NOW + MINUTE])).toEqual([1, 2]);
      expect(await kv.run(slotAcquire, [k("s")], [NOW, 2, "r3", NOW + MINUTE])).toEqual([0, 2]);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["r1", "r2"]);
      const ttl = await kv.pttl(k("s"));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MINUTE);
    });

    it("drops members whose deadline passed before counting", async () => {
      await kv.run(slotAcquire, [k("s")], [NOW, 2, "old", NOW + 1_000]);
      await kv.run(slotAcquire, [k("s")], [NOW, 2, "live", NOW + MINUTE]);
      expect(await kv.run(slotAcquire, [k("s")], [NOW + 1_000, 2, "new", NOW + 2 * MINUTE])).toEqual([1, 2]);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["live", "new"]);
    });

    it("turns a reservation into the job's slot with the job's deadline, and never shortens the set's TTL", async () => {
      await kv.run(slotAcquire, [k("s")], [NOW, 5, "r1", NOW + MINUTE]);
      expect(await kv.run(slotConvert, [k("s")], [NOW, "r1", "job-1", NOW + 60 * MINUTE])).toBe(1);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["job-1"]);
      expect(await kv.zscore(k("s"), "job-1")).toBe(NOW + 60 * MINUTE);
      expect(await kv.pttl(k("s"))).toBeGreaterThan(59 * MINUTE);
      await kv.run(slotAcquire, [k("s")], [NOW, 5, "r2", NOW + MINUTE]);
      expect(await kv.pttl(k("s"))).toBeGreaterThan(59 * MINUTE);
    });

    it("still records the job when its reservation had already expired", async () => {
      expect(await kv.run(slotConvert, [k("s")], [NOW, "gone", "job-2", NOW + MINUTE])).toBe(1);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["job-2"]);
    });

    it("never hands out more slots than the limit under concurrent acquires", async () => {
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => all[i % all.length].run(slotAcquire, [k("race")], [NOW, 7, `r${i}`, NOW + MINUTE])),
      );
      expect(results.filter(([taken]) => taken === 1)).toHaveLength(7);
      expect(await kv.zcard(k("race"))).toBe(7);
    });
  });

  describe("slotExtend", () => {
    it("raises an existing job slot's deadline and the set's TTL, so the next acquire keeps it past its first deadline", async () => {
      await kv.run(slotConvert, [k("s")], [NOW, "r1", "job-1", NOW + MINUTE]);
      expect(await kv.run(slotExtend, [k("s")], [NOW + 30_000, "job-1", NOW + 10 * MINUTE])).toBe(1);
      expect(await kv.zscore(k("s"), "job-1")).toBe(NOW + 10 * MINUTE);
      expect(await kv.pttl(k("s"))).toBeGreaterThan(9 * MINUTE);
      expect(await kv.run(slotAcquire, [k("s")], [NOW + 2 * MINUTE, 1, "r2", NOW + 3 * MINUTE])).toEqual([0, 1]);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["job-1"]);
    });

    it("never lowers a deadline", async () => {
      await kv.run(slotConvert, [k("s")], [NOW, "r1", "job-1", NOW + 10 * MINUTE]);
      expect(await kv.run(slotExtend, [k("s")], [NOW, "job-1", NOW + MINUTE])).toBe(0);
      expect(await kv.zscore(k("s"), "job-1")).toBe(NOW + 10 * MINUTE);
    });

    it("does not bring back a slot that was released or dropped, nor create the set", async () => {
      await kv.run(slotConvert, [k("s")], [NOW, "r1", "job-1", NOW + MINUTE]);
      await kv.zrem(k("s"), "job-1");
      await kv.run(slotAcquire, [k("s")], [NOW, 5, "other", NOW + MINUTE]);
      expect(await kv.run(slotExtend, [k("s")], [NOW, "job-1", NOW + 10 * MINUTE])).toBe(0);
      expect(await kv.zrangeByScore(k("s"), -Infinity, Infinity)).toEqual(["other"]);
      expect(await kv.run(slotExtend, [k("none")], [NOW, "job-1", NOW + 10 * MINUTE])).toBe(0);
      expect(await kv.exists(k("none"))).toBe(false);
    });

    it("keeps a member past its deadline that no acquire has dropped yet (the job is running again)", async () => {
      await kv.run(slotConvert, [k("s")], [NOW, "r1", "job-1", NOW + 1_000]);
      expect(await kv.run(slotExtend, [k("s")], [NOW + 2_000, "job-1", NOW + MINUTE])).toBe(1);
      expect(await kv.run(slotAcquire, [k("s")], [NOW + 3_000, 1, "r2", NOW + MINUTE])).toEqual([0, 1]);
    });
  });

  describe("semaphoreAcquireFirst", () => {
    it("takes from the first pool with room, refreshing that pool's TTL, and answers 0 when all are full", async () => {
      const pools = [k("reserved"), k("shared")];
      expect(await kv.run(semaphoreAcquireFirst, pools, [MINUTE, 1, 2])).toBe(1);
      expect(await kv.run(semaphoreAcquireFirst, pools, [MINUTE, 1, 2])).toBe(2);
      expect(await kv.run(semaphoreAcquireFirst, pools, [MINUTE, 1, 2])).toBe(2);
      expect(await kv.run(semaphoreAcquireFirst, pools, [MINUTE, 1, 2])).toBe(0);
      expect(await kv.get(k("reserved"))).toBe("1");
      expect(await kv.get(k("shared"))).toBe("2");
      const ttl = await kv.pttl(k("shared"));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MINUTE);
    });

    it("with one pool behaves as a plain semaphore, exact under concurrency", async () => {
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => all[i % all.length].run(semaphoreAcquireFirst, [k("one")], [MINUTE, 5])));
      expect(results.filter((r) => r === 1)).toHaveLength(5);
      expect(results.filter((r) => r === 0)).toHaveLength(25);
      expect(await kv.get(k("one"))).toBe("5");
    });
  });

  describe("windowPeek", () => {
    it("reads values and remaining times, '' and -2 for missing keys, floats untruncated", async () => {
      await kv.set(k("a"), "7", MINUTE);
      await kv.set(k("b"), "2.5", MINUTE);
      const [a, ttlA, missing, ttlMissing, b] = await kv.run(windowPeek, [k("a"), k("missing"), k("b")], []);
      expect([a, missing, b]).toEqual(["7", "", "2.5"]);
      expect(ttlMissing).toBe(-2);
      expect(Number(ttlA)).toBeGreaterThan(0);
      expect(Number(ttlA)).toBeLessThanOrEqual(MINUTE);
    });
  });

  describe("limitsAdmit", () => {
    it("counts the request in a window opened by the first one, then reads the budgets as windowPeek does", async () => {
      await kv.set(k("tok"), "12", 2 * MINUTE);
      const first = await kv.run(limitsAdmit, [k("rl"), k("tok"), k("missing")], [1, MINUTE]);
      expect(first.slice(0, 2)).toEqual([1, MINUTE]);
      expect([first[2], first[4], first[5]]).toEqual(["12", "", -2]);
      expect(Number(first[3])).toBeGreaterThan(MINUTE);
      const second = await kv.run(limitsAdmit, [k("rl"), k("tok"), k("missing")], [1, MINUTE]);
      expect(second[0]).toBe(2);
      // The window is not extended by later requests.
      expect(Number(second[1])).toBeLessThanOrEqual(MINUTE);
      expect(Number(second[1])).toBeGreaterThan(0);
      expect(await kv.get(k("rl"))).toBe("2");
    });

    it("only reads the budgets when the rate is off", async () => {
      await kv.set(k("tok"), "3.5", MINUTE);
      const reply = await kv.run(limitsAdmit, [k("tok")], [0, 0]);
      expect(reply.slice(0, 3)).toEqual([0, 0, "3.5"]);
      expect(reply).toHaveLength(4);
      expect(await kv.exists(k("rl"))).toBe(false);
    });
  });
});
