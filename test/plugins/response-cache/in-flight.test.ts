/** The in-flight table behind coalescing: what a follower gets, and how long it may wait. */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CachedAnswer } from "../../../core/llm/cache.ts";
import { InFlightAnswers } from "../../../plugins/response-cache/coalesce.ts";

const answer = (status: number): CachedAnswer => ({ status, contentType: "application/json", body: new TextEncoder().encode("{}") });

describe("InFlightAnswers", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives followers the leader's 2xx answer, and forgets the key once settled", async () => {
    const flights = new InFlightAnswers(1000);
    const settle = flights.lead("k");
    const following = flights.follow("k");
    settle(answer(200));
    settle(answer(201)); // a second settle changes nothing
    expect(await following).toEqual(answer(200));
    expect(flights.follow("k")).toBeUndefined();
  });

  it("sends followers on their own after a non-2xx answer or a failure", async () => {
    const flights = new InFlightAnswers(1000);
    const settleError = flights.lead("a");
    const afterError = flights.follow("a");
    settleError(answer(500));
    const settleFailure = flights.lead("b");
    const afterFailure = flights.follow("b");
    settleFailure(undefined);
    expect(await afterError).toBeUndefined();
    expect(await afterFailure).toBeUndefined();
  });

  it("lets followers go after maxWaitMs when the leader never settles", async () => {
    vi.useFakeTimers();
    const flights = new InFlightAnswers(1000);
    flights.lead("k");
    const following = flights.follow("k");
    let outcome: unknown = "waiting";
    void following?.then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(999);
    expect(outcome).toBe("waiting");
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toBeUndefined();
    expect(flights.follow("k")).toBeUndefined();
  });
});
