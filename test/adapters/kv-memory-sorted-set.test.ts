/**
 * The embedded store's sorted sets against the order Redis keeps, under the updates the usage
 * plugin makes (a new score per request for one member among many): every read after random
 * adds, score changes and removals matches a plainly sorted list of the same members.
 */
import { describe, expect, it } from "vitest";
import { MemoryData } from "../../adapters/kv-memory/data.ts";
import { ManualClock } from "../../core/clock.ts";

/** A small deterministic generator, so a failure repeats. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

function expected(model: Map<string, number>, min: number, max: number, limit?: number): string[] {
  const sorted = [...model.entries()]
    .filter(([, score]) => score >= min && score <= max)
    .sort(([am, as], [bm, bs]) => as - bs || (am < bm ? -1 : am > bm ? 1 : 0))
    .map(([member]) => member);
  return limit === undefined || limit < 0 ? sorted : sorted.slice(0, limit);
}

describe("memory store sorted sets", () => {
  it("keeps (score, member) order through thousands of adds, new scores and removals", () => {
    const data = new MemoryData(new ManualClock());
    const model = new Map<string, number>();
    const next = random(7);
    for (let step = 0; step < 20_000; step++) {
      const member = `consumer-${Math.floor(next() * 2_000)}`;
      const roll = next();
      if (roll < 0.1) {
        expect(data.zrem("index", member)).toBe(model.delete(member) ? 1 : 0);
      } else {
        // Few distinct scores: many ties, ordered by member.
        const score = Math.floor(next() * 300);
        expect(data.zadd("index", score, member)).toBe(model.has(member) ? 0 : 1);
        model.set(member, score);
      }
      if (step % 997 === 0) {
        expect(data.zcard("index")).toBe(model.size);
        expect(data.zrangeByScore("index", -Infinity, Infinity)).toEqual(expected(model, -Infinity, Infinity));
        expect(data.zrangeByScore("index", 100, 200, 50)).toEqual(expected(model, 100, 200, 50));
      }
    }
    for (const [member, score] of model) expect(data.zscore("index", member)).toBe(score);
    expect(data.zrangeByScore("index", 250, 1e9)).toEqual(expected(model, 250, 1e9));
    expect(data.zrangeByScore("index", 1e9, 2e9)).toEqual([]);
  });

  it("drops the key when its last member goes", () => {
    const data = new MemoryData(new ManualClock());
    for (let i = 0; i < 600; i++) data.zadd("set", i, `m${i}`);
    for (let i = 0; i < 600; i++) data.zrem("set", `m${i}`);
    expect(data.zcard("set")).toBe(0);
    expect(data.exists("set")).toBe(false);
  });
});
