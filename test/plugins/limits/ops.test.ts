/**
 * The limits plugin's atomic operations on both stores: the memory store's JS twin and the
 * Lua script on the suite's redis-server (several connections, so races are real). Keys
 * live under a random prefix per test.
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";
import { budgetSettle, limitsAdmit, semaphoreAcquireFirst, slotAcquire, slotConvert, slotExtend, windowPeek } from "../../../plugins/limits/ops.ts";

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
      const args = [1, MINUTE, 10, NOW, NOW + MINUTE, "h1", 100, -1, 100, -1];
      const first = await kv.run(limitsAdmit, [k("rl"), k("tok"), k("rsv:tok"), k("missing"), k("rsv:missing")], args);
      expect(first.slice(0, 3)).toEqual([1, MINUTE, 1]);
      expect([first[3], first[5], first[6], first[7], first[8]]).toEqual(["12", 0, "", -2, 0]);
      expect(Number(first[4])).toBeGreaterThan(MINUTE);
      const second = await kv.run(limitsAdmit, [k("rl"), k("tok"), k("rsv:tok"), k("missing"), k("rsv:missing")], args);
      expect(second[0]).toBe(2);
      // The window is not extended by later requests.
      expect(Number(second[1])).toBeLessThanOrEqual(MINUTE);
      expect(Number(second[1])).toBeGreaterThan(0);
      expect(await kv.get(k("rl"))).toBe("2");
      // Budgets of the -1 rule hold nothing.
      expect(await kv.exists(k("rsv:tok"))).toBe(false);
    });

    it("only reads the budgets when the rate is off", async () => {
      await kv.set(k("tok"), "3.5", MINUTE);
      const reply = await kv.run(limitsAdmit, [k("tok"), k("rsv:tok")], [0, 0, 0, NOW, NOW + MINUTE, "h1", 10, -1]);
      expect(reply.slice(0, 4)).toEqual([0, 0, 1, "3.5"]);
      expect(reply).toHaveLength(6);
      expect(await kv.exists(k("rl"))).toBe(false);
    });

    it("holds each budget's amount while spent + held stays under its limit, and then refuses, holding nothing", async () => {
      const keys = [k("tok"), k("rsv:tok"), k("cost"), k("rsv:cost")];
      const admit = (id: string) => kv.run(limitsAdmit, keys, [0, 0, 0, NOW, NOW + MINUTE, id, 100, 40, 1_000, 300]);
      await kv.set(k("cost"), "350", MINUTE);
      expect(await admit("a")).toEqual([0, 0, 1, "", -2, 0, "350", expect.any(Number), 0]);
      expect(await admit("b")).toEqual([0, 0, 1, "", -2, 40, "350", expect.any(Number), 300]);
      // 350 spent + 600 held < 1000 and 80 held < 100: admitted.
      expect(await admit("c")).toEqual([0, 0, 1, "", -2, 80, "350", expect.any(Number), 600]);
      // 350 + 900 >= 1000: refused, nothing added to either budget.
      expect(await admit("d")).toEqual([0, 0, 0, "", -2, 120, "350", expect.any(Number), 900]);
      expect(await kv.zrangeByScore(k("rsv:tok"), -Infinity, Infinity)).toEqual(["40:a", "40:b", "40:c"]);
      expect(await kv.zrangeByScore(k("rsv:cost"), -Infinity, Infinity)).toEqual(["300:a", "300:b", "300:c"]);
      expect(await kv.zscore(k("rsv:cost"), "300:a")).toBe(NOW + MINUTE);
      const ttl = await kv.pttl(k("rsv:cost"));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MINUTE);
    });

    it("holds nothing for a request its rate refuses", async () => {
      const admit = () => kv.run(limitsAdmit, [k("rl"), k("cost"), k("rsv:cost")], [1, MINUTE, 1, NOW, NOW + MINUTE, "h", 1_000, 10]);
      expect((await admit()).slice(0, 3)).toEqual([1, MINUTE, 1]);
      expect((await admit()).slice(0, 3)).toEqual([2, expect.any(Number), 0]);
      expect(await kv.zrangeByScore(k("rsv:cost"), -Infinity, Infinity)).toEqual(["10:h"]);
    });

    it("drops holds past their deadline before judging", async () => {
      const admit = (now: number, id: string) => kv.run(limitsAdmit, [k("cost"), k("rsv:cost")], [0, 0, 0, now, now + MINUTE, id, 50, 60]);
      expect((await admit(NOW, "old"))[2]).toBe(1);
      expect((await admit(NOW + 1_000, "refused"))[2]).toBe(0);
      // The first hold's deadline has come: it no longer counts, and is gone.
      const later = await admit(NOW + MINUTE, "new");
      expect(later[2]).toBe(1);
      expect(later[5]).toBe(0);
      expect(await kv.zrangeByScore(k("rsv:cost"), -Infinity, Infinity)).toEqual(["60:new"]);
    });

    it("admits no more than the budget's room under concurrent requests", async () => {
      // 50 requests of 100 each at once against 500: five fit.
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) => all[i % all.length].run(limitsAdmit, [k("cost"), k("rsv:cost")], [0, 0, 0, NOW, NOW + MINUTE, `r${i}`, 500, 100])),
      );
      expect(replies.filter((reply) => reply[2] === 1)).toHaveLength(5);
      expect(await kv.zcard(k("rsv:cost"))).toBe(5);
    });
  });

  describe("budgetSettle", () => {
    it("replaces a hold with the amount, opening the window when none is open, and keeps an open window's end", async () => {
      await kv.run(limitsAdmit, [k("tok"), k("rsv:tok"), k("cost"), k("rsv:cost")], [0, 0, 0, NOW, NOW + MINUTE, "h", 100, 40, 1_000, 300]);
      await kv.set(k("tok"), "5", 30_000);
      expect(await kv.run(budgetSettle, [k("tok"), k("rsv:tok"), k("cost"), k("rsv:cost")], ["40:h", 18, MINUTE, "300:h", 78, 2 * MINUTE])).toBe(2);
      expect([await kv.get(k("tok")), await kv.get(k("cost"))]).toEqual(["23", "78"]);
      expect(await kv.pttl(k("tok"))).toBeLessThanOrEqual(30_000);
      expect(await kv.pttl(k("cost"))).toBeGreaterThan(MINUTE);
      expect(await kv.exists(k("rsv:tok"))).toBe(false);
      expect(await kv.exists(k("rsv:cost"))).toBe(false);
    });

    it("gives a hold back with 0 (no window opened), and counts an answer whose hold already expired", async () => {
      await kv.run(limitsAdmit, [k("cost"), k("rsv:cost")], [0, 0, 0, NOW, NOW + MINUTE, "h", 1_000, 300]);
      expect(await kv.run(budgetSettle, [k("cost"), k("rsv:cost")], ["300:h", 0, MINUTE])).toBe(1);
      expect(await kv.exists(k("cost"))).toBe(false);
      expect(await kv.run(budgetSettle, [k("cost"), k("rsv:cost")], ["300:gone", 78, MINUTE])).toBe(0);
      expect(await kv.get(k("cost"))).toBe("78");
    });
  });
});
