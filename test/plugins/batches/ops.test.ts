/**
 * The batch plugin's atomic operations on every store: the memory store's JS twins, the Lua
 * scripts on the suite's redis-server and on its Redis Cluster (where the record and done keys
 * a claim builds from ARGV prefixes must share the queue's slot). Keys live under a random
 * prefix per test (a hash tag on the cluster, as "batch:" is in the gateway).
 */
import { describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import {
  batchCreate,
  batchEnd,
  batchTransition,
  leaseReap,
  leaseRenew,
  lineClaim,
  lineFinish,
  lineRetry,
  linesEnqueue,
  scheduleSet,
  scheduleTake,
  segmentCommit,
} from "../../../plugins/batches/batches/ops.ts";
import { fileCreate, fileDelete } from "../../../plugins/batches/files/ops.ts";
import { keysPerTest, opsStores } from "../../support/ops-stores.ts";

describe.each(opsStores)("batch ops: $name", ({ open }) => {
  let all: KvStore[];
  let kv: KvStore;
  const k = keysPerTest("batchops", open, (opened) => {
    all = opened;
    kv = opened[0];
  });
  const record = (id: string) => k(`rec:${id}`);
  const queue = () => k("q");
  const running = () => k("p");
  const retry = () => k("r");
  const claim = (store: KvStore, now: number, token: string, limit = 10) =>
    store.run(lineClaim, [queue(), running(), retry()], [k("rec:"), k("done:"), now, now + 1000, token, limit, 50]);
  const makeRunning = async (id: string, total: number, expires = 10_000) => {
    await kv.hset(record(id), { id, status: "in_progress", total: String(total), expires_ms: String(expires), enqueued: "0" });
    expect(await kv.run(linesEnqueue, [record(id), queue()], [id, 0, ...Array.from({ length: total }, () => 2)])).toBe(1);
  };

  it("fileCreate and fileDelete keep the record, the index and the deletion schedule together", async () => {
    expect(await kv.run(fileCreate, [k("f:1"), k("idx"), k("exp")], ["file-1", "{}", 60_000, -5, 9000])).toBe(1);
    expect(await kv.get(k("f:1"))).toBe("{}");
    expect(await kv.pttl(k("f:1"))).toBeGreaterThan(50_000);
    expect(await kv.zrangeByScore(k("idx"), -Infinity, Infinity)).toEqual(["file-1"]);
    expect(await kv.zscore(k("exp"), "file-1")).toBe(9000);
    expect(await kv.run(fileDelete, [k("f:1"), k("idx"), k("exp")], ["file-1", 100])).toBe(1);
    expect(await kv.get(k("f:1"))).toBeNull();
    expect(await kv.zcard(k("idx"))).toBe(0);
    expect(await kv.zscore(k("exp"), "file-1")).toBe(100);
    expect(await kv.run(fileDelete, [k("f:1"), k("idx"), k("exp")], ["file-1", 200])).toBe(0);
    expect(await kv.zscore(k("exp"), "file-1")).toBe(100);
  });

  it("batchCreate saves once per Idempotency-Key and answers the first batch's id after", async () => {
    const keys = (id: string) => [record(id), k("owner"), k("all"), k("active"), k("idem")];
    expect(await kv.run(batchCreate, keys("b1"), ["b1", -1, 5, 60_000, "id", "b1", "status", "validating"])).toEqual(["created", "b1"]);
    expect(await kv.run(batchCreate, keys("b2"), ["b2", -2, 5, 60_000, "id", "b2", "status", "validating"])).toEqual(["exists", "b1"]);
    expect(await kv.hgetall(record("b1"))).toEqual({ id: "b1", status: "validating" });
    expect(await kv.hgetall(record("b2"))).toEqual({});
    expect(await kv.zrangeByScore(k("all"), -Infinity, Infinity)).toEqual(["b1"]);
    expect(await kv.zscore(k("active"), "b1")).toBe(5);
    // Without a key, every create saves.
    expect(await kv.run(batchCreate, [record("b3"), k("owner"), k("all"), k("active")], ["b3", -3, 5, 0, "id", "b3", "status", "validating"])).toEqual([
      "created",
      "b3",
    ]);
  });

  it("batchTransition changes the status only from the allowed ones", async () => {
    await kv.hset(record("t"), { id: "t", status: "validating" });
    expect(await kv.run(batchTransition, [record("t")], ["in_progress", "finalizing"])).toBe("validating");
    expect(await kv.hget(record("t"), "status")).toBe("validating");
    expect(await kv.run(batchTransition, [record("t")], ["validating,in_progress", "cancelling", "cancelling_at", "7"])).toBe("validating");
    expect(await kv.hgetall(record("t"))).toEqual({ id: "t", status: "cancelling", cancelling_at: "7" });
    expect(await kv.run(batchTransition, [record("gone")], ["validating", "in_progress"])).toBe("");
  });

  it("linesEnqueue queues a slice once, only while the batch runs", async () => {
    await kv.hset(record("e"), { id: "e", status: "validating", enqueued: "0" });
    expect(await kv.run(linesEnqueue, [record("e"), queue()], ["e", 0, 2, 2])).toBe(0);
    await kv.hset(record("e"), { status: "in_progress" });
    expect(await kv.run(linesEnqueue, [record("e"), queue(), k("q2")], ["e", 0, 2, 3, 2])).toBe(1);
    expect(await kv.run(linesEnqueue, [record("e"), queue()], ["e", 0, 2])).toBe(0);
    expect(await kv.lrange(queue(), 0, -1)).toEqual(["e:0:0", "e:2:0"]);
    expect(await kv.lrange(k("q2"), 0, -1)).toEqual(["e:1:0"]);
    expect(await kv.hget(record("e"), "enqueued")).toBe("3");
  });

  it("lineClaim takes lines up to the limit across callers, drops those of ended, expired or done lines, and moves due retries first", async () => {
    await makeRunning("a", 3);
    const claims = await Promise.all([0, 1, 2, 3].map((i) => claim(all[i % all.length], 100, `t${i}`, 2)));
    expect(claims.filter((c) => c[0] === "line")).toHaveLength(2);
    expect(claims.filter((c) => c[0] === "busy")).toHaveLength(2);
    expect(await kv.zcard(running())).toBe(2);
    expect(await kv.hget(record("a"), "in_flight")).toBe("2");
    // The last line of "a" is done already (a run of it ended elsewhere): dropped.
    await kv.hset(k("done:a"), { "2": "s" });
    expect(await claim(kv, 100, "t9", 10)).toEqual(["empty"]);
    // A batch past its window, or no longer running, starts no line.
    await makeRunning("x", 1, 50);
    await makeRunning("c", 1);
    await kv.hset(record("c"), { status: "cancelling" });
    expect(await claim(kv, 100, "t9", 10)).toEqual(["empty"]);
    // Due retries go to the head of the queue, in due order.
    await makeRunning("r", 3);
    await kv.pop(queue(), "head");
    await kv.pop(queue(), "head");
    await kv.zadd(retry(), 90, "r:1:1");
    await kv.zadd(retry(), 80, "r:0:2");
    await kv.zadd(retry(), 500, "r:9:1");
    expect(await claim(kv, 100, "u", 10)).toEqual(["line", "r:0:2"]);
    expect(await claim(kv, 100, "u", 10)).toEqual(["line", "r:1:1"]);
    expect(await claim(kv, 100, "u", 10)).toEqual(["line", "r:2:0"]);
    expect(await kv.zrangeByScore(retry(), -Infinity, Infinity)).toEqual(["r:9:1"]);
  });

  it("lineFinish counts a line once, keeps its output, and refuses a batch being finalized", async () => {
    await makeRunning("f", 2);
    const [, entry] = await claim(kv, 100, "tok");
    const finish = (member: string, line: string, outcome = "s") =>
      kv.run(lineFinish, [running(), record("f"), k("done:f"), k("out:f")], [member, line, outcome, `o{"line":${line}}`]);
    expect(await finish(`${entry}|tok`, "0")).toEqual([1, 1, 1, 0, "in_progress"]);
    expect(await kv.hgetall(k("out:f"))).toEqual({ "0": 'o{"line":0}' });
    // A second run of the same line (its lease had lapsed) is not counted again.
    expect(await finish("f:0:0|other", "0")).toEqual([0, 1, 1, 0, "in_progress"]);
    expect(await kv.hget(record("f"), "completed")).toBe("1");
    await kv.hset(record("f"), { status: "finalizing" });
    expect((await finish("f:1:0|x", "1", "f"))[0]).toBe(0);
    expect(await kv.hget(record("f"), "failed")).toBeNull();
  });

  it("lineRetry, leaseRenew and leaseReap move running lines as their leases say", async () => {
    await makeRunning("l", 3);
    const [, first] = await claim(kv, 100, "a");
    const [, second] = await claim(kv, 100, "a");
    const [, third] = await claim(kv, 100, "a");
    expect(await kv.run(lineRetry, [running(), retry(), record("l")], [`${first}|a`, "l:0:1", 700])).toBe(1);
    expect(await kv.run(lineRetry, [running(), retry(), record("l")], [`${first}|a`, "l:0:1", 700])).toBe(0);
    expect(await kv.zscore(retry(), "l:0:1")).toBe(700);
    expect(await kv.run(leaseRenew, [running()], [5000, `${second}|a`, "l:9:0|a"])).toBe(1);
    // At 2000 the third line's lease (1100) has lapsed, the second's (renewed to 5000) has not.
    await kv.hset(record("l"), {});
    expect(await kv.run(leaseReap, [running(), queue()], [k("rec:"), 2000, 100])).toBe(1);
    expect(await kv.lrange(queue(), 0, -1)).toEqual([third]);
    expect(await kv.hget(record("l"), "in_flight")).toBe("1");
    // A lapsed line of a batch no longer running is dropped, not requeued.
    await kv.hset(record("l"), { status: "cancelling" });
    expect(await kv.run(leaseReap, [running(), queue()], [k("rec:"), 9000, 100])).toBe(1);
    expect(await kv.lrange(queue(), 0, -1)).toEqual([third]);
    expect(await kv.hget(record("l"), "in_flight")).toBe("0");
  });

  it("segmentCommit records segments only when every line is still waiting", async () => {
    await kv.hset(k("out:s"), { "1": "oA", "2": "eB", "3": "oC" });
    await kv.hset(record("s"), { pending: "3" });
    const commit = (segments: string[], lines: string[]) =>
      kv.run(segmentCommit, [k("out:s"), k("seg:s"), record("s")], [segments.length, ...segments, ...lines]);
    expect(await commit(["o:x"], ["1", "9"])).toBe(0);
    expect(await commit(["o:y", "e:z"], ["1", "2"])).toBe(1);
    expect(await kv.hgetall(k("out:s"))).toEqual({ "3": "oC" });
    expect(await kv.lrange(k("seg:s"), 0, -1)).toEqual(["o:y", "e:z"]);
    expect(await kv.hget(record("s"), "pending")).toBe("1");
  });

  it("batchEnd sets the final status once, leaves the schedule and drops what the batch kept", async () => {
    await kv.hset(record("n"), { id: "n", status: "finalizing" });
    await kv.zadd(k("active"), 5, "n");
    await kv.hset(k("done:n"), { "0": "s" });
    const end = () => kv.run(batchEnd, [record("n"), k("active"), k("notify"), k("done:n")], ["finalizing", "completed", 60_000, "n", 70, "completed_at", "9"]);
    expect(await end()).toBe(1);
    expect(await end()).toBe(0);
    expect(await kv.hgetall(record("n"))).toEqual({ id: "n", status: "completed", completed_at: "9" });
    expect(await kv.pttl(record("n"))).toBeGreaterThan(50_000);
    expect(await kv.zcard(k("active"))).toBe(0);
    expect(await kv.exists(k("done:n"))).toBe(false);
    // No callback URL: nothing to notify.
    expect(await kv.zcard(k("notify"))).toBe(0);
  });

  it("batchEnd puts a batch with a callback URL in the notification outbox, in the same step", async () => {
    await kv.hset(record("w"), { id: "w", status: "in_progress", callback_url: "https://example.com/hook" });
    await kv.zadd(k("active"), 5, "w");
    expect(await kv.run(batchEnd, [record("w"), k("active"), k("notify")], ["in_progress", "cancelled", 60_000, "w", 70])).toBe(1);
    expect(await kv.zscore(k("notify"), "w")).toBe(70);
  });

  it("scheduleTake leases what is due to one caller; scheduleSet only moves a batch earlier unless told", async () => {
    await kv.zadd(k("active"), 10, "a");
    await kv.zadd(k("active"), 50, "b");
    const taken = await Promise.all(all.map((store) => store.run(scheduleTake, [k("active")], [20, 1000, 10])));
    expect(taken.flat()).toEqual(["a"]);
    expect(await kv.zscore(k("active"), "a")).toBe(1000);
    expect(await kv.run(scheduleSet, [k("active")], [500, "a", "earlier"])).toBe(1);
    expect(await kv.run(scheduleSet, [k("active")], [900, "a", "earlier"])).toBe(0);
    expect(await kv.run(scheduleSet, [k("active")], [900, "a", "any"])).toBe(1);
    expect(await kv.zscore(k("active"), "a")).toBe(900);
    expect(await kv.run(scheduleSet, [k("active")], [1, "ended", "any"])).toBe(0);
    expect(await kv.zscore(k("active"), "ended")).toBeNull();
  });
});
