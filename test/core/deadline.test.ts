/**
 * `settleWithin`: the value when the work settles in time, EXPIRED when it does not, a
 * rejection passed on. Its second look for a busy process is tested against a real Redis
 * (test/adapters/kv-redis-busy-process.test.ts).
 */
import { describe, expect, it } from "vitest";
import { EXPIRED, settleWithin } from "../../core/deadline.ts";

describe("settleWithin", () => {
  it("gives the value of work that settles in time", async () => {
    expect(await settleWithin(Promise.resolve("answer"), 50)).toBe("answer");
  });

  it("gives EXPIRED for work that never settles", async () => {
    expect(await settleWithin(new Promise<string>(() => {}), 5)).toBe(EXPIRED);
  });

  it("passes a rejection on", async () => {
    await expect(settleWithin(Promise.reject(new Error("refused")), 50)).rejects.toThrow("refused");
  });
});
