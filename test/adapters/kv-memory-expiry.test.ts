/**
 * The embedded store's expiry bookkeeping under keys whose TTL is renewed on every write, as
 * the usage counters (kept 400 days) and limit windows are on every request: its memory must
 * follow the number of keys, not the number of writes, and keys must still expire on time.
 */
import { describe, expect, it } from "vitest";
import { MemoryData } from "../../adapters/kv-memory/data.ts";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { type Clock, ManualClock } from "../../core/clock.ts";
import type { AtomicOp } from "../../core/stores/kv.ts";

const DAY = 86_400_000;

describe("memory store expiries", () => {
  it("keeps its expiry heap bounded when the same keys' TTLs are renewed on every write", () => {
    const data = new MemoryData(new ManualClock());
    for (let i = 0; i < 100_000; i++) {
      const key = `usage:${i % 50}`;
      data.hincrBy(key, "requests", 1);
      data.pexpire(key, 400 * DAY);
    }
    expect(data.hget("usage:7", "requests")).toBe("2000");
    // 50 keys: one heap entry each, plus at most the slack of stale ones before a rebuild.
    expect(data.pendingExpiries).toBeLessThanOrEqual(2 * 50 + 1024 + 1);
  });

  it("still expires every key at its latest TTL after the heap was rebuilt", () => {
    const clock = new ManualClock();
    const data = new MemoryData(clock);
    for (let round = 0; round < 50; round++) {
      for (let k = 0; k < 100; k++) data.set(`window:${k}`, String(round), (k % 2 === 0 ? 1 : 3) * 60_000);
      clock.advance(100);
    }
    data.set("forever", "1");
    clock.advance(2 * 60_000);
    expect(data.get("window:0")).toBeNull();
    expect(data.get("window:1")).toBe("49");
    clock.advance(2 * 60_000);
    expect(data.get("window:1")).toBeNull();
    expect(data.get("forever")).toBe("1");
    // Every expired key was reclaimed by the sweeps, not only the ones read above.
    for (let i = 0; i < 100; i++) data.get("forever");
    expect(data.pendingExpiries).toBe(0);
  });

  it("runs an atomic operation at one instant, as Redis runs a script", async () => {
    // A clock that moves 1 ms on every read: without one time per operation, the key below
    // would expire between two of the operation's reads.
    let reads = 0;
    const clock: Clock = { now: () => Date.UTC(2026, 0, 1) + reads++ };
    const kv = new MemoryKv(clock);
    await kv.set("window", "7", 3);
    const readsBefore = reads;
    const readTenTimes: AtomicOp<(string | number)[]> = {
      name: "readTenTimes",
      lua: "",
      js: (data, [key]) => Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? (data.get(key) ?? "") : data.pttl(key))),
    };
    expect(await kv.run(readTenTimes, ["window"], [])).toEqual(["7", 2, "7", 2, "7", 2, "7", 2, "7", 2]);
    expect(reads - readsBefore).toBe(1);
    // Outside an operation, time moves on as the clock does.
    reads += 2;
    expect(await kv.get("window")).toBeNull();
  });
});
