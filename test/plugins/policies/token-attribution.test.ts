import { describe, expect, it } from "vitest";
import { TokenAttribution } from "../../../plugins/policies/token-attribution.ts";

const target = (ruleIndex: number) => ({ ruleIndex, limits: { rate: 0, periodMs: 0, tokenRate: 10, tokenPeriodMs: 1000 } });
const event = (consumer: string, model = "m") => ({ consumer, serviceType: "chat", model });

describe("token attribution", () => {
  it("finds the budget of an in-flight request by consumer, service type and model", () => {
    const attribution = new TokenAttribution();
    const leave = attribution.enter("alice", "chat", "m", target(2));
    expect(attribution.targetOf(event("alice"))).toEqual(target(2));
    expect(attribution.targetOf(event("bob"))).toBeUndefined();
    expect(attribution.targetOf(event("alice", "other"))).toBeUndefined();
    leave();
    expect(attribution.targetOf(event("alice"))).toBeUndefined();
    expect(attribution.size).toBe(0);
  });

  it("keeps an entry until the last of concurrent requests leaves, and leaving twice is harmless", () => {
    const attribution = new TokenAttribution();
    const first = attribution.enter("alice", "chat", "m", target(0));
    const second = attribution.enter("alice", "chat", "m", target(0));
    first();
    first();
    expect(attribution.targetOf(event("alice"))).toEqual(target(0));
    second();
    expect(attribution.size).toBe(0);
  });
});
