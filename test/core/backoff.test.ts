import { describe, expect, it } from "vitest";
import { jitteredDelayMs, retryDelayMs } from "../../core/backoff.ts";

describe("retry backoff", () => {
  it("starts at retry_backoff and doubles on each retry, capped at max_backoff (spec defaults 30s / 10m)", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((retry) => retryDelayMs(retry, 30_000, 600_000));
    expect(delays).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 600_000, 600_000]);
  });

  it("caps short schedules too (1s / 2s)", () => {
    expect([1, 2, 3, 4].map((retry) => retryDelayMs(retry, 1000, 2000))).toEqual([1000, 2000, 2000, 2000]);
  });

  it("never exceeds the cap, even when the base is larger or the retry count huge", () => {
    expect(retryDelayMs(1, 5000, 2000)).toBe(2000);
    expect(retryDelayMs(10_000, 1000, 3_600_000)).toBe(3_600_000);
    expect(retryDelayMs(3, 0, 1000)).toBe(0);
  });

  it("full jitter: a draw between 0 and the retry's delay, never past the cap", () => {
    // The injected random at its extremes: 0 gives no wait, just under 1 the whole delay.
    expect(jitteredDelayMs(1, 250, 5000, () => 0)).toBe(0);
    expect(jitteredDelayMs(1, 250, 5000, () => 0.999999)).toBe(249);
    expect(jitteredDelayMs(2, 250, 5000, () => 0.5)).toBe(250);
    expect(jitteredDelayMs(3, 250, 5000, () => 0.5)).toBe(500);
    expect(jitteredDelayMs(20, 250, 5000, () => 0.999999)).toBe(4999);
    for (let retry = 1; retry <= 10; retry++) {
      for (const draw of [0, 0.1, 0.5, 0.9, 0.999999]) {
        const delay = jitteredDelayMs(retry, 250, 5000, () => draw);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(retryDelayMs(retry, 250, 5000));
      }
    }
  });
});
