/**
 * The webhooks plugin's atomic operations on both stores: the memory store's JS twin and
 * the Lua script on the suite's redis-server (several connections, so races are real).
 * Keys live under a random prefix per test.
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";
import { deadLetterRedeliver, deadLetterTake, deliveryCreate, outboxClaim } from "../../../plugins/webhooks/ops.ts";

const HOUR = 3_600_000;

describe.each(opsStores)("webhooks ops: $name", ({ open }) => {
  let all: KvStore[];
  let kv: KvStore;
  const k = keysPerTest("webhookops", open, (opened) => {
    all = opened;
    kv = opened[0];
  });
  const members = (key: string) => kv.zrangeByScore(k(key), -Infinity, Infinity);
  const create = (store: KvStore, id: string, options: { body?: string; mode?: "any" | "listed"; outbox?: boolean } = {}) =>
    store.run(
      deliveryCreate,
      [k(`delivery:${id}`), k("retries"), ...(options.outbox === false ? [] : [k("outbox")])],
      [id, options.body ?? `{"id":"${id}"}`, HOUR, 5000, options.mode ?? "any"],
    );

  describe("deliveryCreate", () => {
    it("stores the record with its TTL, schedules it and takes the job off the outbox", async () => {
      await kv.zadd(k("outbox"), 1000, "a");
      await kv.zadd(k("outbox"), 1000, "other");
      expect(await create(kv, "a")).toBe(1);
      expect(await kv.get(k("delivery:a"))).toBe(`{"id":"a"}`);
      expect(await kv.pttl(k("delivery:a"))).toBeGreaterThan(HOUR - 10_000);
      expect(await kv.zscore(k("retries"), "a")).toBe(5000);
      expect(await members("outbox")).toEqual(["other"]);
    });

    it("refuses an existing delivery, changes nothing of it, and still takes the job off the outbox", async () => {
      expect(await create(kv, "a")).toBe(1);
      await kv.zadd(k("retries"), 9000, "a");
      await kv.zadd(k("outbox"), 1000, "a");
      expect(await create(kv, "a", { body: "second" })).toBe(0);
      expect(await kv.get(k("delivery:a"))).toBe(`{"id":"a"}`);
      expect(await kv.zscore(k("retries"), "a")).toBe(9000);
      expect(await members("outbox")).toEqual([]);
    });

    it("creates a job the outbox does not name in mode any (a job that just ended here)", async () => {
      expect(await create(kv, "a")).toBe(1);
      expect(await members("outbox")).toEqual([]);
    });

    it("in mode listed, creates only while the outbox names the job: a delivery made and finished meanwhile is never made again", async () => {
      await kv.zadd(k("outbox"), 1000, "a");
      expect(await create(kv, "a", { mode: "listed" })).toBe(1);
      // Delivered: the record and schedule entry are removed (DeliveryQueue.finish).
      await kv.del(k("delivery:a"));
      await kv.zrem(k("retries"), "a");
      expect(await create(kv, "a", { mode: "listed" })).toBe(0);
      expect(await kv.exists(k("delivery:a"))).toBe(false);
      expect(await kv.zcard(k("retries"))).toBe(0);
    });

    it("works without an outbox key (no job store in this process)", async () => {
      expect(await create(kv, "a", { outbox: false })).toBe(1);
      expect(await create(kv, "a", { outbox: false })).toBe(0);
      expect(await kv.zscore(k("retries"), "a")).toBe(5000);
    });

    it("creates one delivery when the event and the sweep race", async () => {
      await kv.zadd(k("outbox"), 1000, "a");
      const replies = await Promise.all(all.flatMap((store) => [create(store, "a"), create(store, "a", { mode: "listed" })]));
      expect(replies.filter((r) => r === 1)).toHaveLength(1);
      expect(await members("outbox")).toEqual([]);
    });
  });

  describe("outboxClaim", () => {
    it("takes the due members, lowest first, and keeps them leased until the lease ends", async () => {
      await kv.zadd(k("outbox"), 300, "c");
      await kv.zadd(k("outbox"), 100, "a");
      await kv.zadd(k("outbox"), 200, "b");
      await kv.zadd(k("outbox"), 5000, "later");
      expect(await kv.run(outboxClaim, [k("outbox")], [1000, 2, 61_000])).toEqual(["a", "b"]);
      expect(await kv.zscore(k("outbox"), "a")).toBe(61_000);
      expect(await kv.zscore(k("outbox"), "b")).toBe(61_000);
      expect(await kv.run(outboxClaim, [k("outbox")], [1000, 10, 61_000])).toEqual(["c"]);
      expect(await kv.run(outboxClaim, [k("outbox")], [1000, 10, 61_000])).toEqual([]);
      // The lease ended without a delivery being created: due again.
      expect(await kv.run(outboxClaim, [k("outbox")], [61_000, 10, 122_000])).toEqual(["later", "a", "b", "c"]);
    });

    it("never gives one member to two sweepers", async () => {
      const ids = Array.from({ length: 40 }, (_, i) => `j${i}`);
      for (const id of ids) await kv.zadd(k("outbox"), 100, id);
      const replies = await Promise.all([...all, ...all].map((store) => store.run(outboxClaim, [k("outbox")], [1000, 7, 61_000])));
      const taken = replies.flat();
      expect(new Set(taken).size).toBe(taken.length);
      expect(await members("outbox")).toHaveLength(40);
    });
  });
  describe("deadLetterRedeliver", () => {
    const redeliver = (store: KvStore, entry: string, id: string) =>
      store.run(deadLetterRedeliver, [k("deadletter"), k(`delivery:${id}`), k("retries")], [entry, id, `{"id":"${id}"}`, HOUR, 7000]);

    it("swaps the entry for a delivery due at the given time", async () => {
      await kv.push(k("deadletter"), "entry-a", "tail");
      await kv.push(k("deadletter"), "entry-b", "tail");
      expect(await redeliver(kv, "entry-a", "a")).toBe(1);
      expect(await kv.lrange(k("deadletter"), 0, -1)).toEqual(["entry-b"]);
      expect(await kv.get(k("delivery:a"))).toBe('{"id":"a"}');
      expect(await kv.pttl(k("delivery:a"))).toBeGreaterThan(HOUR - 10_000);
      expect(await kv.zscore(k("retries"), "a")).toBe(7000);
    });

    it("leaves the entry when a delivery of the job is under way, and does nothing for an entry gone", async () => {
      await kv.push(k("deadletter"), "entry-a", "tail");
      await kv.set(k("delivery:a"), "in flight");
      expect(await redeliver(kv, "entry-a", "a")).toBe(-1);
      expect(await kv.lrange(k("deadletter"), 0, -1)).toEqual(["entry-a"]);
      expect(await kv.get(k("delivery:a"))).toBe("in flight");
      expect(await redeliver(kv, "entry-x", "x")).toBe(0);
      expect(await kv.exists(k("delivery:x"))).toBe(false);
      expect(await members("retries")).toEqual([]);
    });

    it("redelivers an entry once when replicas race", async () => {
      await kv.push(k("deadletter"), "entry-a", "tail");
      const outcomes = await Promise.all(all.map((store) => redeliver(store, "entry-a", "a")));
      expect(outcomes.filter((n) => n === 1)).toHaveLength(1);
    });
  });

  describe("deadLetterTake", () => {
    it("appends the entry and forgets the delivery's record and schedule entry, leaving the others", async () => {
      await kv.push(k("deadletter"), "entry-old", "tail");
      await kv.set(k("delivery:a"), '{"id":"a"}');
      await kv.zadd(k("retries"), 5000, "a");
      await kv.zadd(k("retries"), 6000, "b");
      expect(await kv.run(deadLetterTake, [k("deadletter"), k("delivery:a"), k("retries")], ["entry-a", "a"])).toBe(1);
      expect(await kv.lrange(k("deadletter"), 0, -1)).toEqual(["entry-old", "entry-a"]);
      expect(await kv.exists(k("delivery:a"))).toBe(false);
      expect(await members("retries")).toEqual(["b"]);
    });
  });
});
