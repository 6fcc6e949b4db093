/**
 * The job store's atomic operations on both stores: the memory store's JS twin and the
 * Lua script on the suite's redis-server (several connections, so races are real). Keys
 * live under a random prefix per test.
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";
import { jobCancel, jobCreate, jobFinish, jobRelease, jobRetry, jobTransition, leaseRenew, relayClaim } from "../../../plugins/async-jobs/ops.ts";

const HOUR = 3_600_000;
/** The notification outbox score the ops are given (sweep-after ms). */
const NOTIFY_AFTER = 30_000;
const CALLBACK = { callback_url: "https://hooks.example.com/done" };

/** relayClaim over one model's queue (the op takes a list of models): the id claimed, or null. */
async function claimOne(store: KvStore, k: (name: string) => string, token: string, now = 1_000): Promise<string | null> {
  const found = await store.run(relayClaim, [k("queue"), k("processing"), k("retry")], [k("lease:"), token, 30_000, now, 0]);
  return found === null ? null : found[1];
}

describe.each(opsStores)("job store ops: $name", ({ open }) => {
  let all: KvStore[];
  let kv: KvStore;
  const k = keysPerTest("opstest", open, (opened) => {
    all = opened;
    kv = opened[0];
  });
  const outbox = () => kv.zrangeByScore(k("outbox"), -Infinity, Infinity);
  const create = (id: string, options: { end?: "head" | "tail"; index?: boolean; fields?: Record<string, string> } = {}) =>
    kv.run(
      jobCreate,
      [k(`job:${id}`), k(`tomb:${id}`), k("queue"), ...(options.index === false ? [] : [k("index")])],
      [id, HOUR, 2 * HOUR, `{"service_type":"asr"}`, options.end ?? "tail", 1000, 0, ...Object.entries({ id, status: "pending", ...options.fields }).flat()],
    );

  it("jobCreate writes the record, tombstone, queue entry and index entry together", async () => {
    expect(await create("a")).toBe(1);
    expect(await create("b")).toBe(1);
    expect(await create("p", { end: "head" })).toBe(1);
    expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "pending" });
    expect(await kv.pttl(k("job:a"))).toBeGreaterThan(HOUR - 10_000);
    expect(await kv.get(k("tomb:a"))).toBe(`{"service_type":"asr"}`);
    expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(2 * HOUR - 10_000);
    expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["p", "a", "b"]);
    expect(await kv.zrangeByScore(k("index"), -Infinity, Infinity)).toEqual(["a", "b", "p"]);
    expect(await kv.pttl(k("index"))).toBeGreaterThan(HOUR - 10_000);
  });

  it("jobCreate refuses an existing id and changes nothing", async () => {
    await create("a");
    expect(await create("a", { fields: { status: "completed" } })).toBe(0);
    expect(await kv.hget(k("job:a"), "status")).toBe("pending");
    expect(await kv.llen(k("queue"))).toBe(1);
  });

  it("jobCreate prunes index members scored at or below the bound", async () => {
    await kv.zadd(k("index"), 5, "old");
    await kv.run(jobCreate, [k("job:n"), k("tomb:n"), k("queue"), k("index")], ["n", HOUR, HOUR, "{}", "tail", 100, 10, "id", "n", "status", "pending"]);
    expect(await kv.zrangeByScore(k("index"), -Infinity, Infinity)).toEqual(["n"]);
  });

  it("leaseRenew renews the holder's lease and extends a processing record, never shortening it", async () => {
    await create("a", { fields: { status: "processing" } });
    await kv.pexpire(k("job:a"), 4_000);
    await kv.pexpire(k("tomb:a"), 5_000);
    await kv.pexpire(k("index"), 4_000);
    await kv.set(k("lease:a"), "me", 1_000);
    const keys = [k("lease:a"), k("job:a"), k("tomb:a"), k("index")];
    expect(await kv.run(leaseRenew, keys, ["me", 60_000, 64_000, 65_000])).toBe(1);
    expect(await kv.pttl(k("lease:a"))).toBeGreaterThan(59_000);
    expect(await kv.pttl(k("job:a"))).toBeGreaterThan(63_000);
    expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(64_000);
    expect(await kv.pttl(k("index"))).toBeGreaterThan(63_000);
    // Never shorter: a renewal with a smaller TTL leaves the longer one.
    expect(await kv.run(leaseRenew, keys, ["me", 60_000, 10_000, 11_000])).toBe(1);
    expect(await kv.pttl(k("job:a"))).toBeGreaterThan(63_000);
    // Another holder: nothing changes.
    await kv.set(k("lease:a"), "other", 1_000);
    expect(await kv.run(leaseRenew, keys, ["me", 60_000, 200_000, 200_000])).toBe(0);
    expect(await kv.get(k("lease:a"))).toBe("other");
    expect(await kv.pttl(k("job:a"))).toBeLessThan(65_000);
    // A lapsed lease nobody took is taken back.
    await kv.del(k("lease:a"));
    expect(await kv.run(leaseRenew, keys, ["me", 60_000, 64_000, 65_000])).toBe(1);
    expect(await kv.get(k("lease:a"))).toBe("me");
  });

  it("leaseRenew leaves a record that is not processing alone", async () => {
    await create("a", { fields: { status: "completed" } });
    await kv.pexpire(k("job:a"), 4_000);
    expect(await kv.run(leaseRenew, [k("lease:a"), k("job:a"), k("tomb:a")], ["me", 60_000, 64_000, 65_000])).toBe(1);
    expect(await kv.pttl(k("job:a"))).toBeLessThanOrEqual(4_000);
  });

  it("jobTransition changes only from an allowed status and follows the new TTL", async () => {
    await create("a");
    const keys = [k("job:a"), k("tomb:a"), k("index")];
    expect(await kv.run(jobTransition, keys, ["processing", "completed", 60_000, 120_000])).toEqual([0, "pending"]);
    expect(await kv.run(jobTransition, keys, ["pending", "processing", 3 * HOUR, 4 * HOUR, "started_at", "t"])).toEqual([1, "pending"]);
    expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "processing", started_at: "t" });
    expect(await kv.pttl(k("job:a"))).toBeGreaterThan(3 * HOUR - 10_000);
    expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(4 * HOUR - 10_000);
    // The index is extended to outlive the record, never shortened.
    expect(await kv.pttl(k("index"))).toBeGreaterThan(3 * HOUR - 10_000);
    await kv.run(jobTransition, keys, ["processing", "completed", 60_000, 120_000]);
    expect(await kv.pttl(k("index"))).toBeGreaterThan(3 * HOUR - 10_000);
    expect(await kv.run(jobTransition, [k("job:gone"), k("tomb:gone")], ["pending", "processing", 1000, 1000])).toEqual([0, ""]);
  });

  it("jobCancel cancels and unqueues a pending job, signals a processing one, leaves others", async () => {
    await create("a");
    await create("b");
    const cancel = (id: string) =>
      kv.run(jobCancel, [k(`job:${id}`), k(`tomb:${id}`), k("queue"), k(`cancel:${id}`), k("outbox"), k("retry")], [
        id,
        HOUR,
        2 * HOUR,
        60_000,
        NOTIFY_AFTER,
        "updated_at",
        "t",
      ]);
    expect(await cancel("a")).toEqual(["cancelled", "pending"]);
    expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "cancelled", updated_at: "t" });
    expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["b"]);
    expect(await cancel("a")).toEqual(["cancelled", "cancelled"]);

    await kv.hset(k("job:b"), { status: "processing" });
    expect(await cancel("b")).toEqual(["processing", "processing"]);
    expect(await kv.get(k("cancel:b"))).toBe("1");
    expect(await kv.hget(k("job:b"), "status")).toBe("processing");
    expect(await cancel("missing")).toEqual(["", ""]);
    // No callback_url: nobody to notify.
    expect(await outbox()).toEqual([]);
  });

  it("jobCancel puts a cancelled job with a callback_url in the notification outbox, not a signalled one", async () => {
    await create("a", { fields: CALLBACK });
    await create("b", { fields: CALLBACK });
    await kv.hset(k("job:b"), { status: "processing" });
    const cancel = (id: string) =>
      kv.run(jobCancel, [k(`job:${id}`), k(`tomb:${id}`), k("queue"), k(`cancel:${id}`), k("outbox"), k("retry"), k("index")], [
        id,
        HOUR,
        2 * HOUR,
        60_000,
        NOTIFY_AFTER,
      ]);
    expect(await cancel("a")).toEqual(["cancelled", "pending"]);
    expect(await cancel("b")).toEqual(["processing", "processing"]);
    expect(await outbox()).toEqual(["a"]);
    expect(await kv.zscore(k("outbox"), "a")).toBe(NOTIFY_AFTER);
    expect(await kv.pttl(k("index"))).toBeGreaterThan(HOUR - 10_000);
  });

  it("jobCancel takes a job waiting for its retry out of the retry set, so no claim runs it again", async () => {
    await create("a");
    await kv.lrem(k("queue"), 0, "a");
    await kv.zadd(k("retry"), 5_000, "a");
    const keys = [k("job:a"), k("tomb:a"), k("queue"), k("cancel:a"), k("outbox"), k("retry"), k("index")];
    expect(await kv.run(jobCancel, keys, ["a", HOUR, 2 * HOUR, 60_000, NOTIFY_AFTER])).toEqual(["cancelled", "pending"]);
    expect(await kv.zcard(k("retry"))).toBe(0);
    expect(await claimOne(kv, k, "tok", 10_000)).toBeNull();
  });

  it("relayClaim first moves the due retries to the queue head, earliest first, and leaves the others waiting", async () => {
    await create("x");
    await kv.zadd(k("retry"), 200, "r2");
    await kv.zadd(k("retry"), 100, "r1");
    await kv.zadd(k("retry"), 900, "r3");
    const claim = (now: number) => claimOne(kv, k, "tok", now);
    expect(await claim(50)).toBe("x");
    expect(await kv.zcard(k("retry"))).toBe(3);
    expect(await claim(500)).toBe("r1");
    expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["r2"]);
    expect(await kv.zrangeByScore(k("retry"), -Infinity, Infinity)).toEqual(["r3"]);
    expect(await kv.get(k("lease:r1"))).toBe("tok");
    expect(await claim(500)).toBe("r2");
    expect(await claim(899)).toBeNull();
    expect(await claim(900)).toBe("r3");
    expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["x", "r1", "r2", "r3"]);
  });

  it("racing claimers move each due retry once: every job is claimed exactly once", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `d${i}`);
    for (const [i, id] of ids.entries()) await kv.zadd(k("retry"), i, id);
    const claimer = async (store: KvStore) => {
      const got: string[] = [];
      for (;;) {
        const id = await claimOne(store, k, "tok");
        if (id === null) return got;
        got.push(id);
      }
    };
    const claimed = (await Promise.all([...all, ...all].map(claimer))).flat();
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(await kv.zcard(k("retry"))).toBe(0);
    expect(await kv.llen(k("queue"))).toBe(0);
  });

  it("jobRetry ends the claim and parks the job pending in the retry set, only for the lease holder and never past a cancel", async () => {
    await create("a");
    await claimOne(kv, k, "mine");
    await kv.hset(k("job:a"), { status: "processing" });
    const keys = [k("job:a"), k("tomb:a"), k("processing"), k("lease:a"), k("cancel:a"), k("retry"), k("index")];
    const retry = (token: string) => kv.run(jobRetry, keys, ["a", token, 7_000, 3 * HOUR, 4 * HOUR, "updated_at", "t"]);

    expect(await retry("theirs")).toBe("leased");
    await kv.set(k("cancel:a"), "1");
    expect(await retry("mine")).toBe("cancel");
    expect(await kv.hget(k("job:a"), "status")).toBe("processing");
    expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["a"]);
    expect(await kv.zcard(k("retry"))).toBe(0);
    await kv.del(k("cancel:a"));

    expect(await retry("mine")).toBe("scheduled");
    expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "pending", updated_at: "t" });
    expect(await kv.pttl(k("job:a"))).toBeGreaterThan(3 * HOUR - 10_000);
    expect(await kv.pttl(k("tomb:a"))).toBeGreaterThan(4 * HOUR - 10_000);
    expect(await kv.pttl(k("index"))).toBeGreaterThan(3 * HOUR - 10_000);
    expect(await kv.zscore(k("retry"), "a")).toBe(7_000);
    expect(await kv.llen(k("processing"))).toBe(0);
    expect(await kv.exists(k("lease:a"))).toBe(false);
    expect(await kv.llen(k("queue"))).toBe(0);

    // No longer processing (finished meanwhile, or gone): the claim ends, nothing is scheduled.
    await kv.zrem(k("retry"), "a");
    await kv.hset(k("job:a"), { status: "completed" });
    await kv.push(k("processing"), "a", "tail");
    expect(await retry("mine")).toBe("dropped");
    expect(await kv.llen(k("processing"))).toBe(0);
    expect(await kv.zcard(k("retry"))).toBe(0);
    expect(await kv.hget(k("job:a"), "status")).toBe("completed");
  });

  it("relayClaim over several models: the first job from the given model on, round the list, each visited model's due retries first", async () => {
    const keysOf = (model: string) => [k(`queue-${model}`), k(`processing-${model}`), k(`retry-${model}`)];
    const keys = ["a", "b", "c"].flatMap(keysOf);
    const claim = (from: number) => kv.run(relayClaim, keys, [k("lease:"), "tok", 30_000, 1_000, from]);
    await kv.push(k("queue-a"), "a1", "tail");
    await kv.zadd(k("retry-c"), 500, "c1");
    await kv.zadd(k("retry-b"), 5_000, "b-later");
    // From b: b has nothing due, c's due retry is claimed; a is not visited.
    expect(await claim(1)).toEqual([2, "c1"]);
    expect(await kv.lrange(k("processing-c"), 0, -1)).toEqual(["c1"]);
    expect(await kv.get(k("lease:c1"))).toBe("tok");
    // From c: round the list to a.
    expect(await claim(2)).toEqual([0, "a1"]);
    expect(await claim(0)).toBeNull();
    expect(await kv.zcard(k("retry-b"))).toBe(1);
  });

  it("relayClaim moves the head to the processing list with a lease", async () => {
    await create("a");
    await create("b");
    expect(await claimOne(kv, k, "tok")).toBe("a");
    expect(await kv.lrange(k("processing"), 0, -1)).toEqual(["a"]);
    expect(await kv.get(k("lease:a"))).toBe("tok");
    expect(await kv.pttl(k("lease:a"))).toBeGreaterThan(20_000);
    await claimOne(kv, k, "tok");
    expect(await claimOne(kv, k, "tok")).toBeNull();
  });

  it("racing claimers never get the same job and miss none", async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `j${i}`);
    for (const id of ids) await create(id, { index: false });
    const claimer = async (store: KvStore) => {
      const got: string[] = [];
      for (;;) {
        const id = await claimOne(store, k, "tok");
        if (id === null) return got;
        got.push(id);
      }
    };
    const results = await Promise.all([...all, ...all].map(claimer));
    const claimed = results.flat();
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(await kv.llen(k("processing"))).toBe(60);
  });

  it("jobFinish ends the claim atomically while the lease is ours or lapsed, never another relay's", async () => {
    await create("a");
    await claimOne(kv, k, "mine");
    await kv.hset(k("job:a"), { status: "processing" });
    await kv.set(k("cancel:a"), "1");
    const keys = [k("job:a"), k("tomb:a"), k("processing"), k("lease:a"), k("cancel:a"), k("outbox"), k("index")];
    const finish = (token: string) => kv.run(jobFinish, keys, ["a", token, "pending,processing", "completed", HOUR, 2 * HOUR, NOTIFY_AFTER, "result_key", "r"]);

    expect(await finish("theirs")).toEqual([0, "leased"]);
    expect(await kv.llen(k("processing"))).toBe(1);
    expect(await finish("mine")).toEqual([1, "processing"]);
    expect(await kv.hgetall(k("job:a"))).toEqual({ id: "a", status: "completed", result_key: "r" });
    expect(await kv.llen(k("processing"))).toBe(0);
    expect(await kv.exists(k("lease:a"))).toBe(false);
    expect(await kv.exists(k("cancel:a"))).toBe(false);
    // Already terminal: the claim cleanup still happens, the status stays.
    expect(await finish("mine")).toEqual([0, "completed"]);
    // No callback_url: nobody to notify.
    expect(await outbox()).toEqual([]);
  });

  it("jobFinish puts a job with a callback_url in the notification outbox only when it made the change", async () => {
    await create("a", { fields: CALLBACK, index: false });
    await claimOne(kv, k, "mine");
    const keys = [k("job:a"), k("tomb:a"), k("processing"), k("lease:a"), k("cancel:a"), k("outbox")];
    const finish = (token: string, score: number) => kv.run(jobFinish, keys, ["a", token, "pending,processing", "failed", HOUR, 2 * HOUR, score, "error", "e"]);

    expect(await finish("theirs", NOTIFY_AFTER)).toEqual([0, "leased"]);
    expect(await outbox()).toEqual([]);
    expect(await finish("mine", NOTIFY_AFTER)).toEqual([1, "pending"]);
    expect(await kv.zscore(k("outbox"), "a")).toBe(NOTIFY_AFTER);
    // A repeat finds it terminal: the outbox entry keeps its first score.
    expect(await finish("mine", 2 * NOTIFY_AFTER)).toEqual([0, "failed"]);
    expect(await kv.zscore(k("outbox"), "a")).toBe(NOTIFY_AFTER);
  });

  it("jobRelease requeues at the head, leaves cancelled and foreign claims alone", async () => {
    await create("a");
    await create("b");
    await claimOne(kv, k, "mine");
    await kv.hset(k("job:a"), { status: "processing" });
    const release = (token: string) => kv.run(jobRelease, [k("job:a"), k("processing"), k("queue"), k("lease:a"), k("cancel:a")], ["a", token]);

    expect(await release("theirs")).toBe(0);
    await kv.set(k("cancel:a"), "1");
    expect(await release("mine")).toBe(2);
    expect(await kv.llen(k("processing"))).toBe(1);
    await kv.del(k("cancel:a"));
    expect(await release("mine")).toBe(1);
    expect(await kv.lrange(k("queue"), 0, -1)).toEqual(["a", "b"]);
    expect(await kv.hget(k("job:a"), "status")).toBe("pending");
    expect(await kv.llen(k("processing"))).toBe(0);
    expect(await kv.exists(k("lease:a"))).toBe(false);
  });
});
