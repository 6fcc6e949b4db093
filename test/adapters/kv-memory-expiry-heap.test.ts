/**
 * The embedded store's expiry heap (adapters/kv-memory/expiry-heap.ts): every key comes out at
 * or after its time, earliest first, however pushes, pops and clears interleave, across the
 * growth of its arrays.
 */
import { describe, expect, it } from "vitest";
import { ExpiryHeap } from "../../adapters/kv-memory/expiry-heap.ts";

/** A deterministic generator, so a failure reproduces. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describe("ExpiryHeap", () => {
  it("pops what is due, earliest first, as a sorted list would", () => {
    const random = seeded(7);
    const heap = new ExpiryHeap();
    let model: Array<{ at: number; key: string }> = [];
    let now = 0;
    for (let step = 0; step < 20_000; step++) {
      const roll = random();
      if (roll < 0.55) {
        // Times repeat (ties) and reach past the heap's first arrays (1,024 entries).
        const at = now + Math.floor(random() * 500);
        const key = `k${step}`;
        heap.push(at, key);
        model.push({ at, key });
      } else if (roll < 0.9999) {
        now += Math.floor(random() * 3);
        const key = heap.popDue(now);
        const due = model.filter((entry) => entry.at <= now);
        if (due.length === 0) {
          expect(key).toBeUndefined();
          continue;
        }
        const earliest = Math.min(...due.map((entry) => entry.at));
        const popped = model.find((entry) => entry.key === key);
        expect(popped?.at).toBe(earliest);
        model = model.filter((entry) => entry.key !== key);
      } else {
        heap.clear();
        model = [];
      }
      expect(heap.size).toBe(model.length);
    }
    // Whatever is left comes out in order once everything is due.
    const rest: number[] = [];
    for (let key = heap.popDue(Infinity); key !== undefined; key = heap.popDue(Infinity)) {
      rest.push(model.find((entry) => entry.key === key)!.at);
    }
    expect(rest).toEqual(model.map((entry) => entry.at).sort((a, b) => a - b));
    expect(heap.size).toBe(0);
  });
});
