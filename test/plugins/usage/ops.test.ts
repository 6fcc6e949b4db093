/**
 * The usage plugin's atomic operations on both stores: the memory store's JS twin and the
 * Lua script on the suite's redis-server. Keys live under a random prefix per test.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { groupsAdd, hashesRead, rankPage, usageRecord } from "../../../plugins/usage/ops.ts";

const stores: { name: string; open: () => Promise<KvStore> }[] = [
  { name: "memory", open: async () => new MemoryKv(new ManualClock()) },
  { name: "redis", open: async () => await RedisKv.connect({ url: inject("redisUrl") }) },
];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 11, 31, 12);

describe.each(stores)("usage ops: $name", ({ open }) => {
  let kv: KvStore;
  let p: string;
  beforeAll(async () => {
    kv = await open();
  });
  afterAll(async () => {
    await kv.close();
  });
  beforeEach(() => {
    p = `usageops:${crypto.randomUUID()}:`;
  });
  const k = (name: string) => `${p}${name}`;
  const shared = () => [k("consumers"), k("rank:chat"), k("d"), k("w"), k("m")];
  type Counts = {
    requests?: number;
    jobs?: number;
    prompt?: number;
    completion?: number;
    costNanos?: number;
    seconds?: number;
    /** Outcome counter (`outcome.<outcome>`) -> count. */
    outcomes?: Record<string, number>;
  };
  const countsOf = (c: Counts) => [c.requests ?? 0, c.jobs ?? 0, c.prompt ?? 0, c.completion ?? 0, c.costNanos ?? 0, c.seconds ?? 0];
  const pairsOf = (outcomes: Record<string, number>) => [Object.keys(outcomes).length, ...Object.entries(outcomes).flat()];
  /** A batch of records; the buckets get the sums, as the recorder passes them. */
  const recordMany = (records: Array<{ consumer: string; counts: Counts; now?: number }>, options: { retention?: number } = {}) => {
    const totals = [0, 0, 0, 0, 0, 0];
    const outcomeTotals: Record<string, number> = {};
    for (const r of records) {
      countsOf(r.counts).forEach((n, i) => (totals[i] += n));
      for (const [counter, n] of Object.entries(r.counts.outcomes ?? {})) outcomeTotals[counter] = (outcomeTotals[counter] ?? 0) + n;
    }
    return kv.run(
      usageRecord,
      [...shared(), ...records.map((r) => k(`c:${r.consumer}`))],
      [
        options.retention ?? 0,
        400 * DAY,
        800 * DAY,
        "chat|",
        ...totals,
        ...pairsOf(outcomeTotals),
        ...records.flatMap((r) => [r.consumer, r.now ?? NOW, ...countsOf(r.counts), ...pairsOf(r.counts.outcomes ?? {})]),
      ],
    );
  };
  const record = (consumer: string, counts: Counts, options: { now?: number; retention?: number } = {}) =>
    recordMany([{ consumer, counts, now: options.now }], options);

  it("adds one event's counts to the consumer, the indexes and the three buckets at once", async () => {
    expect(await record("alice", { requests: 1, prompt: 11, completion: 7 })).toBe(1);
    expect(await record("alice", { requests: 1, jobs: 1, seconds: 0.25 })).toBe(1);
    expect(await record("alice", { seconds: 0.5 })).toBe(1);
    const consumer = await kv.hgetall(k("c:alice"));
    expect(consumer).toMatchObject({
      "chat|requests": "2",
      "chat|jobs": "1",
      "chat|prompt_tokens": "11",
      "chat|completion_tokens": "7",
      last_active: String(NOW),
    });
    expect(Number(consumer["chat|processing_seconds"])).toBeCloseTo(0.75);
    for (const bucket of ["d", "w", "m"]) {
      const fields = await kv.hgetall(k(bucket));
      expect(fields).toMatchObject({ requests: "2", jobs: "1", prompt_tokens: "11", completion_tokens: "7" });
      expect(Number(fields.processing_seconds)).toBeCloseTo(0.75);
    }
    expect(await kv.zscore(k("consumers"), "alice")).toBe(NOW);
    expect(await kv.zscore(k("rank:chat"), "alice")).toBe(2);
  });

  it("writes nothing for an event whose counts are all zero, and no field for a zero counter", async () => {
    expect(await record("bob", {})).toBe(0);
    expect(await kv.exists(k("c:bob"))).toBe(false);
    expect(await kv.exists(k("d"))).toBe(false);
    await record("bob", { requests: 1 });
    expect(Object.keys(await kv.hgetall(k("d")))).toEqual(["requests"]);
  });

  it("expires daily and weekly buckets from their first write, never extends them, and keeps monthly ones", async () => {
    await record("alice", { requests: 1 });
    await kv.pexpire(k("d"), HOUR);
    await record("alice", { requests: 1 });
    expect(await kv.pttl(k("d"))).toBeLessThanOrEqual(HOUR);
    expect(await kv.pttl(k("w"))).toBeGreaterThan(800 * DAY - 60_000);
    expect(await kv.pttl(k("m"))).toBe(-1);
  });

  it("gives a new consumer record the retention TTL and leaves an existing one's alone", async () => {
    await record("alice", { requests: 1 }, { retention: HOUR });
    expect(await kv.pttl(k("c:alice"))).toBeGreaterThan(HOUR - 60_000);
    await kv.pexpire(k("c:alice"), 60_000);
    await record("alice", { requests: 1 }, { retention: 10 * HOUR });
    expect(await kv.pttl(k("c:alice"))).toBeLessThanOrEqual(60_000);
    await record("carol", { requests: 1 });
    expect(await kv.pttl(k("c:carol"))).toBe(-1);
  });

  it("restarts the rank score when the consumer's record of that type is new", async () => {
    await record("alice", { requests: 5 });
    expect(await kv.zscore(k("rank:chat"), "alice")).toBe(5);
    await kv.del(k("c:alice"));
    await record("alice", { requests: 1 });
    expect(await kv.zscore(k("rank:chat"), "alice")).toBe(1);
    // Tokens alone do not touch the rank.
    await record("alice", { prompt: 3 });
    expect(await kv.zscore(k("rank:chat"), "alice")).toBe(1);
  });

  it("writes a batch of consumers in one call: each its own record, the buckets the sums", async () => {
    await record("alice", { requests: 2 });
    const written = await recordMany([
      { consumer: "alice", counts: { requests: 1, prompt: 10 }, now: NOW + 1 },
      { consumer: "bob", counts: { requests: 3, completion: 4, seconds: 0.5 }, now: NOW + 2 },
      { consumer: "carol", counts: {} },
    ]);
    expect(written).toBe(2);
    expect(await kv.hgetall(k("c:alice"))).toEqual({ "chat|requests": "3", "chat|prompt_tokens": "10", last_active: String(NOW + 1) });
    expect(await kv.hgetall(k("c:bob"))).toMatchObject({ "chat|requests": "3", "chat|completion_tokens": "4", last_active: String(NOW + 2) });
    expect(await kv.exists(k("c:carol"))).toBe(false);
    expect(await kv.zscore(k("rank:chat"), "alice")).toBe(3);
    expect(await kv.zscore(k("rank:chat"), "bob")).toBe(3);
    expect(await kv.zscore(k("consumers"), "carol")).toBeNull();
    for (const bucket of ["d", "w", "m"]) {
      const fields = await kv.hgetall(k(bucket));
      expect(fields).toMatchObject({ requests: "6", prompt_tokens: "10", completion_tokens: "4" });
      expect(Number(fields.processing_seconds)).toBeCloseTo(0.5);
    }
  });

  it("adds cost in nano-units next to the tokens, in the consumer and the buckets; no cost field when nothing cost", async () => {
    await record("carol", { requests: 1, prompt: 11, completion: 7 });
    expect(await kv.hgetall(k("c:carol"))).not.toHaveProperty("chat|cost_nanos");
    await record("carol", { requests: 1, prompt: 10, completion: 5, costNanos: 1_650_123 });
    await record("carol", { seconds: 2, costNanos: 1_200_000 });
    expect(await kv.hgetall(k("c:carol"))).toMatchObject({ "chat|cost_nanos": "2850123", "chat|requests": "2" });
    for (const bucket of ["d", "w", "m"]) expect(await kv.hgetall(k(bucket))).toMatchObject({ cost_nanos: "2850123", prompt_tokens: "21" });
  });

  it("counts refused requests per outcome in the consumer and the buckets; outcomes alone make a record, but no rank", async () => {
    // Outcomes alone: the record is created (with its retention TTL and last activity) and indexed.
    expect(await record("dave", { outcomes: { "outcome.guardrail_blocked": 1 } }, { retention: HOUR })).toBe(1);
    expect(await kv.hgetall(k("c:dave"))).toEqual({ "chat|outcome.guardrail_blocked": "1", last_active: String(NOW) });
    expect(await kv.pttl(k("c:dave"))).toBeGreaterThan(HOUR - 60_000);
    expect(await kv.zscore(k("consumers"), "dave")).toBe(NOW);
    expect(await kv.zscore(k("rank:chat"), "dave")).toBeNull();
    // In a batch, next to other records (with and without outcomes of their own) and counters.
    const written = await recordMany([
      { consumer: "dave", counts: { prompt: 11, completion: 7, outcomes: { "outcome.guardrail_blocked": 2, "outcome.other": 1 } }, now: NOW + 1 },
      { consumer: "erin", counts: { requests: 2 } },
      { consumer: "frank", counts: { outcomes: { "outcome.guardrail_blocked": 1 } } },
      { consumer: "gina", counts: { outcomes: { "outcome.guardrail_blocked": 0 } } },
    ]);
    expect(written).toBe(3);
    expect(await kv.hgetall(k("c:dave"))).toEqual({
      "chat|outcome.guardrail_blocked": "3",
      "chat|outcome.other": "1",
      "chat|prompt_tokens": "11",
      "chat|completion_tokens": "7",
      last_active: String(NOW + 1),
    });
    expect(await kv.hgetall(k("c:erin"))).toEqual({ "chat|requests": "2", last_active: String(NOW) });
    expect(await kv.hgetall(k("c:frank"))).toEqual({ "chat|outcome.guardrail_blocked": "1", last_active: String(NOW) });
    expect(await kv.exists(k("c:gina"))).toBe(false);
    expect(await kv.zscore(k("rank:chat"), "erin")).toBe(2);
    for (const bucket of ["d", "w", "m"]) {
      expect(await kv.hgetall(k(bucket))).toEqual({
        "outcome.guardrail_blocked": "4",
        "outcome.other": "1",
        requests: "2",
        prompt_tokens: "11",
        completion_tokens: "7",
      });
    }
    expect(await kv.pttl(k("d"))).toBeGreaterThan(399 * DAY);
  });

  it("groupsAdd adds each field to the three group hashes and sets the daily and weekly TTLs once", async () => {
    const keys = [k("gd"), k("gw"), k("gm")];
    expect(await kv.run(groupsAdd, keys, [400 * DAY, 800 * DAY, "model|gpt|requests", 2, "model|gpt|cost_nanos", 150])).toBe(2);
    expect(await kv.run(groupsAdd, keys, [400 * DAY, 800 * DAY, "model|gpt|cost_nanos", 50, "consumer|ann|tokens", 18])).toBe(2);
    for (const key of keys) expect(await kv.hgetall(key)).toEqual({ "model|gpt|requests": "2", "model|gpt|cost_nanos": "200", "consumer|ann|tokens": "18" });
    expect(await kv.pttl(keys[0])).toBeGreaterThan(399 * DAY);
    expect(await kv.pttl(keys[1])).toBeGreaterThan(799 * DAY);
    expect(await kv.pttl(keys[2])).toBe(-1);
    expect(await kv.run(groupsAdd, keys, [400 * DAY, 800 * DAY])).toBe(0);
  });

  it("rankPage pages a sorted set highest first, with its size", async () => {
    for (const [member, score] of [["a", 1], ["b", 5], ["c", 3], ["d", 5], ["e", 0]] as const) await kv.zadd(k("z"), score, member);
    expect(await kv.run(rankPage, [k("z")], [0, 3])).toEqual([5, "d", "b", "c"]);
    expect(await kv.run(rankPage, [k("z")], [3, 3])).toEqual([5, "a", "e"]);
    expect(await kv.run(rankPage, [k("z")], [10, 3])).toEqual([5]);
    expect(await kv.run(rankPage, [k("none")], [0, 20])).toEqual([0]);
  });

  it("hashesRead reads several hashes, [] for missing ones", async () => {
    await kv.hset(k("h1"), { requests: "3" });
    await kv.hset(k("h2"), { requests: "1", jobs: "1" });
    const [h1, missing, h2] = await kv.run(hashesRead, [k("h1"), k("missing"), k("h2")], []);
    expect(h1).toEqual(["requests", "3"]);
    expect(missing).toEqual([]);
    expect(Object.fromEntries([[h2[0], h2[1]], [h2[2], h2[3]]])).toEqual({ requests: "1", jobs: "1" });
  });
});
