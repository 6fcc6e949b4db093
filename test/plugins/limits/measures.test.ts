/**
 * The measures each (service type, model, user type, consumer) is kept with (measures.ts): built
 * once and reused, yet the same as building them for each request would give.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { costBudgets } from "../../../plugins/limits/cost.ts";
import { MeasuresCache } from "../../../plugins/limits/measures.ts";
import { LimitTable } from "../../../plugins/limits/table.ts";
import { tokenBudgets } from "../../../plugins/limits/tokens.ts";

const CONFIG = `
pricing:
  models: { small: { input: 1, output: 2 } }
rate_limits:
  chat:
    "*": { rate: 10, period: 1m, token_rate: 1000, token_period: 1h }
    premium: { rate: 100, period: 30s, cost_rate: 5 }
    free: { rate: 0 }
services:
  - type: chat
    model: small
    inference_url: http://backend
    token_limits:
      "*": { token_rate: 50, token_period: 10m }
      premium: { token_rate: 500, cost_rate: 1 }
  - type: chat
    model: big
    inference_url: http://backend
`;

describe("MeasuresCache", () => {
  const table = new LimitTable(loadConfig(CONFIG, {}).config);

  /** What a request measured without the cache would get. */
  function built(model: string, userType: string | undefined, consumer: string) {
    const service = { type: "chat", model };
    const limits = table.forType("chat", userType);
    const tokens = tokenBudgets(table, service, consumer, userType, limits);
    const costs = costBudgets(table, service, consumer, userType, limits);
    const rated = limits !== undefined && limits.rate > 0;
    const syncKeys = rated ? [`rl:chat:${encodeURIComponent(consumer)}`] : [];
    const windows = [
      ...tokens.map((b) => ({ key: b.key, held: `rsv:${b.key}`, kind: "tokens", periodMs: b.periodMs })),
      ...costs.map((b) => ({ key: b.key, held: `rsv:${b.key}`, kind: "cost", periodMs: b.periodMs })),
    ];
    const llmKeys = [...syncKeys, ...windows.flatMap((w) => [w.key, w.held])];
    return { limits, tokens, costs, windows, syncKeys, llmKeys, admitArgs: [rated ? 1 : 0, rated ? limits.periodMs : 0, rated ? limits.rate : 0] };
  }

  it("keeps each consumer's measures apart by model and user type, and reuses them", () => {
    const cache = new MeasuresCache(table);
    const cases: [string, string | undefined, string][] = [
      ["small", undefined, "alice"],
      ["small", "premium", "alice"],
      ["small", "free", "alice"],
      ["big", "premium", "alice"],
      ["small", "premium", "bob:with/odd chars"],
      ["", undefined, "alice"],
    ];
    for (const [model, userType, consumer] of cases) {
      const measures = cache.of("chat", model, userType, consumer);
      expect(measures).toEqual(built(model, userType, consumer));
      expect(cache.of("chat", model, userType, consumer)).toBe(measures);
    }
    // Each budget's window with the holds next to it.
    expect(cache.of("chat", "small", "premium", "alice").llmKeys).toEqual([
      "rl:chat:alice",
      "tok:chat:alice:small",
      "rsv:tok:chat:alice:small",
      "cost:chat:alice:small",
      "rsv:cost:chat:alice:small",
      "cost:chat:alice",
      "rsv:cost:chat:alice",
    ]);
    expect(cache.of("chat", "small", "free", "alice").llmKeys).toEqual(["tok:chat:alice:small", "rsv:tok:chat:alice:small"]);
  });

  it("keeps one entry per consumer for the models without budgets of their own, and one per model for those with", () => {
    const cache = new MeasuresCache(table);
    const onBig = cache.of("chat", "big", undefined, "alice");
    // "other" is not in the config either: measured by the type's entry alone, as "big" is.
    expect(cache.of("chat", "other", undefined, "alice")).toBe(onBig);
    expect(onBig).toEqual(built("other", undefined, "alice"));
    expect(cache.of("chat", "big", "premium", "alice")).not.toBe(onBig);
    // "small" has its own budgets, whose keys name it.
    expect(cache.of("chat", "small", undefined, "alice")).not.toBe(onBig);
    expect(cache.of("chat", "small", undefined, "alice")).toEqual(built("small", undefined, "alice"));
    // A thousand models and twenty consumers: twenty entries, not 20,000 (past what the cache keeps).
    const first = Array.from({ length: 20 }, (_, i) => cache.of("chat", "model-0", undefined, `c${i}`));
    for (let m = 1; m < 1_000; m++) {
      for (let i = 0; i < 20; i++) expect(cache.of("chat", `model-${m}`, undefined, `c${i}`)).toBe(first[i]);
    }
  });

  it("once full, keeps the measures it holds and builds the others per request", () => {
    const cache = new MeasuresCache(table);
    const first = cache.of("chat", "small", undefined, "c0");
    for (let i = 1; i < 12_000; i++) cache.of("chat", "small", undefined, `c${i}`);
    // Cleared when full, the cache would build c0's again (docs/design.md#bounded-caches).
    expect(cache.of("chat", "small", undefined, "c0")).toBe(first);
    const late = cache.of("chat", "small", undefined, "c11999");
    expect(late).toEqual(built("small", undefined, "c11999"));
    expect(cache.of("chat", "small", undefined, "c11999")).not.toBe(late);
  });

  it("stays right when callers bring more consumers than it keeps", () => {
    const cache = new MeasuresCache(table);
    for (let i = 0; i < 25_000; i++) {
      const consumer = `c${i % 12_000}`;
      expect(cache.of("chat", "small", undefined, consumer).syncKeys).toEqual([`rl:chat:${consumer}`]);
    }
  });
});
