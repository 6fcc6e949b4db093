/**
 * The GC's atomic operations on both stores: the memory store's JS twin and the Lua script
 * on the suite's redis-server (several connections, so races between "replicas" are real).
 * Every key is passed in KEYS, so each test uses its own random key prefix.
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";
import { gcDropQueueOrphan, gcFailStalePending, gcReap } from "../../../plugins/gc/ops.ts";

const HOUR = 3_600_000;
const NOW = "2026-01-01T00:00:00.000Z";
/** The notification outbox score the ops are given (sweep-after ms). */
const NOTIFY_AFTER = 30_000;

describe.each(opsStores)("gc ops: $name", ({ open }) => {
  let all: KvStore[];
  let kv: KvStore;
  const k = keysPerTest("gcops", open, (opened) => {
    all = opened;
    kv = opened[0];
  });
  const record = async (id: string, fields: Record<string, string>, ttl = HOUR) => {
    await kv.hset(k(`job:${id}`), { id, ...fields });
    await kv.pexpire(k(`job:${id}`), ttl);
    await kv.set(k(`tomb:${id}`), "{}", ttl);
  };
  const reapKeys = (id: string, index = true) => [
    k("processing"),
    k("queue"),
    k("deadletter"),
    k(`job:${id}`),
    k(`lease:${id}`),
    k(`tomb:${id}`),
    k("outbox"),
    ...(index ? [k("index")] : []),
  ];
  const reap = (store: KvStore, id: string, max = 3, end: "head" | "tail" = "head") =>
    store.run(gcReap, reapKeys(id), [id, max, end, 2 * HOUR, 3 * HOUR, 4 * HOUR, 5 * HOUR, NOW, "given up", NOTIFY_AFTER]);
  const outbox = () => kv.zrangeByScore(k("outbox"), -Infinity, Infinity);

  describe("gcReap", () => {
    it("leaves a leased job alone", async () => {
      await record("a", { status: "processing" });
      await kv.push(k("processing"), "a", "tail");
      await kv.set(k("lease:a"), "token", 60_000);
      expect(await reap(kv, "a")).toEqual(["leased", 0]);
      expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["a"]);
      expect(await kv.hget(k("job:a"), "status")).toBe("processing");
    });

    it("leaves an entry whose record is gone to the queue orphan sweep", async () => {
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a")).toEqual(["gone", 0]);
      expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["a"]);
    });

    it("does nothing when the entry is no longer in the processing list", async () => {
      await record("a", { status: "processing" });
      expect(await reap(kv, "a")).toEqual(["absent", 0]);
      expect(await kv.hget(k("job:a"), "status")).toBe("processing");
      expect(await kv.llen(k("queue"))).toBe(0);
    });

    it("requeues at the head, counts the reap and resets the pending TTL", async () => {
      await record("a", { status: "processing" }, 60_000);
      await kv.push(k("queue"), "waiting", "tail");
      await kv.push(k("processing"), "other", "tail");
      await kv.push(k("processing"), "a", "tail");
      await kv.zadd(k("index"), 1, "a");
      await kv.pexpire(k("index"), 60_000);
      expect(await reap(kv, "a")).toEqual(["requeued", 1]);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["a", "waiting"]);
      expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["other"]);
      expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "pending", reap_attempts: "1", updated_at: NOW });
      expect(await kv.pttl(k("job:a"))).toBeGreaterThan(2 * HOUR - 10_000);
      expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(3 * HOUR - 10_000);
      expect(await kv.pttl(k("index"))).toBeGreaterThan(2 * HOUR - 10_000);
    });

    it("requeues at the tail when asked", async () => {
      await record("a", { status: "processing" });
      await kv.push(k("queue"), "waiting", "tail");
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a", 3, "tail")).toEqual(["requeued", 1]);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["waiting", "a"]);
    });

    it("requeues a claimed job that never started (still pending)", async () => {
      await record("a", { status: "pending" });
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a")).toEqual(["requeued", 1]);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["a"]);
    });

    it("dead-letters once the attempts exceed the maximum", async () => {
      await record("a", { status: "processing", reap_attempts: "2" });
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a", 3)).toEqual(["requeued", 3]);
      await kv.move(k("queue"), k("processing"), "head", "tail");
      await kv.hset(k("job:a"), { status: "processing" });
      expect(await reap(kv, "a", 3)).toEqual(["deadletter", 4]);
      expect(await kv.lrange(k("deadletter"), 0, -1)).toEqual(["a"]);
      expect(await kv.llen(k("queue"))).toBe(0);
      expect(await kv.llen(k("processing"))).toBe(0);
      expect(await kv.hgetall(k("job:a"))).toEqual({
        id: "a",
        status: "failed",
        error: "given up",
        reap_attempts: "4",
        updated_at: NOW,
        completed_at: NOW,
      });
      expect(await kv.pttl(k("job:a"))).toBeGreaterThan(4 * HOUR - 10_000);
      expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(5 * HOUR - 10_000);
      // No callback_url: nobody to notify.
      expect(await outbox()).toEqual([]);
    });

    it("puts a dead-lettered job with a callback_url in the notification outbox, not a requeued one", async () => {
      await record("a", { status: "processing", callback_url: "https://hooks.example.com/x" });
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a", 1)).toEqual(["requeued", 1]);
      expect(await outbox()).toEqual([]);
      await kv.move(k("queue"), k("processing"), "head", "tail");
      expect(await reap(kv, "a", 1)).toEqual(["deadletter", 2]);
      expect(await kv.zscore(k("outbox"), "a")).toBe(NOTIFY_AFTER);
    });

    it("dead-letters at the first reap when max_reap_attempts is 0", async () => {
      await record("a", { status: "processing" });
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a", 0)).toEqual(["deadletter", 1]);
    });

    it("removes the stale entry of a finished job without touching the record", async () => {
      await record("a", { status: "completed" });
      await kv.push(k("processing"), "a", "tail");
      expect(await reap(kv, "a")).toEqual(["finished", 0]);
      expect(await kv.llen(k("processing"))).toBe(0);
      expect(await kv.llen(k("queue"))).toBe(0);
      expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "completed" });
    });

    it("works without a consumer index key", async () => {
      await record("a", { status: "processing" });
      await kv.push(k("processing"), "a", "tail");
      expect(await kv.run(gcReap, reapKeys("a", false), ["a", 3, "head", HOUR, HOUR, HOUR, HOUR, NOW, "x", NOTIFY_AFTER])).toEqual(["requeued", 1]);
    });

    it("reaps each job exactly once when replicas race", async () => {
      const ids = Array.from({ length: 20 }, (_, i) => `job${i}`);
      for (const id of ids) {
        await record(id, { status: "processing" });
        await kv.push(k("processing"), id, "tail");
      }
      // Every connection reaps every job, interleaved.
      const replies = await Promise.all(all.flatMap((store) => ids.map((id) => reap(store, id))));
      const requeued = replies.filter(([outcome]) => outcome === "requeued");
      expect(requeued).toHaveLength(ids.length);
      expect(replies.filter(([outcome]) => outcome !== "requeued").every(([outcome]) => outcome === "absent")).toBe(true);
      const queue = await kv.lrange(k("queue"), 0, -1);
      expect(queue.slice().sort()).toEqual(ids.slice().sort());
      for (const id of ids) expect(await kv.hget(k(`job:${id}`), "reap_attempts")).toBe("1");
    });
  });

  describe("gcFailStalePending", () => {
    const fail = (store: KvStore, id: string, index = true) =>
      store.run(
        gcFailStalePending,
        [k("queue"), k(`job:${id}`), k(`tomb:${id}`), k("outbox"), ...(index ? [k("index")] : [])],
        [id, 4 * HOUR, 5 * HOUR, NOW, "too old", NOTIFY_AFTER],
      );

    it("fails a queued pending job and takes it out of the queue", async () => {
      await record("a", { status: "pending" }, 60_000);
      await kv.push(k("queue"), "a", "tail");
      await kv.push(k("queue"), "b", "tail");
      expect(await fail(kv, "a")).toBe(1);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["b"]);
      expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "failed", error: "too old", updated_at: NOW, completed_at: NOW });
      expect(await kv.pttl(k("job:a"))).toBeGreaterThan(4 * HOUR - 10_000);
      expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(5 * HOUR - 10_000);
      expect(await outbox()).toEqual([]);
    });

    it("puts a failed job with a callback_url in the notification outbox", async () => {
      await record("a", { status: "pending", callback_url: "https://hooks.example.com/x" });
      await kv.push(k("queue"), "a", "tail");
      expect(await fail(kv, "a")).toBe(1);
      expect(await kv.zscore(k("outbox"), "a")).toBe(NOTIFY_AFTER);
    });

    it("does nothing when a relay claimed it first (no longer queued)", async () => {
      await record("a", { status: "pending" });
      expect(await fail(kv, "a", false)).toBe(0);
      expect(await kv.hget(k("job:a"), "status")).toBe("pending");
      expect(await outbox()).toEqual([]);
    });

    it("does nothing to a job that is not pending, nor to its entry", async () => {
      await record("a", { status: "processing" });
      await kv.push(k("queue"), "a", "tail");
      expect(await fail(kv, "a")).toBe(0);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["a"]);
      expect(await fail(kv, "missing")).toBe(0);
    });

    it("fails a job once when replicas race", async () => {
      await record("a", { status: "pending" });
      await kv.push(k("queue"), "a", "tail");
      const replies = await Promise.all(all.flatMap((store) => [fail(store, "a"), fail(store, "a")]));
      expect(replies.filter((r) => r === 1)).toHaveLength(1);
    });
  });

  describe("gcDropQueueOrphan", () => {
    it("removes every entry of an id whose record is gone", async () => {
      for (const id of ["x", "live", "x"]) await kv.push(k("queue"), id, "tail");
      await record("live", { status: "pending" });
      expect(await kv.run(gcDropQueueOrphan, [k("queue"), k("job:x")], ["x"])).toBe(2);
      expect(await kv.run(gcDropQueueOrphan, [k("queue"), k("job:live")], ["live"])).toBe(0);
      expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["live"]);
      expect(await kv.run(gcDropQueueOrphan, [k("queue"), k("job:x")], ["x"])).toBe(0);
    });
  });
});
