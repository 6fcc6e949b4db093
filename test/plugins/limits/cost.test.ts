/**
 * Cost budgets (docs/cost.md) in-process on the memory store: an async type's budget counts what
 * the relay's jobs cost (processing seconds on a manual clock x `per_second`), the crossing
 * job passes and later submissions get 429 before their upload is read; `judgeCost`, the
 * decision any budget owner (an API key) can reuse; and the config problems of a budget
 * that could never bite. LLM budgets across two replicas on Redis are in test/e2e/cost.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { toNanos } from "../../../core/pricing/price.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { addCost, judgeCost } from "../../../core/limits/cost-budget.ts";
import { checkCostBudget } from "../../../plugins/limits/cost.ts";
import pricing from "../../../plugins/pricing/index.ts";
import { jobForm, type LimitsRuntime, limitsRuntime, until } from "./harness.ts";

const CONFIG = `
server:
  consumer_header: X-Consumer
pricing:
  currency: EUR
  models:
    whisper: {per_second: 0.01}
rate_limits:
  transcription:
    "*": { cost_rate: 0.5, cost_period: 1h }
services:
  - type: transcription
    model: whisper
    inference_url: http://backend
    operations: { transcribe: ["/transcribe"] }
    accepted_exts: [wav]
`;

let gw: LimitsRuntime | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const submit = (g: LimitsRuntime, consumer: string) =>
  g.request("/jobs/transcription", { method: "POST", body: jobForm(), headers: { "x-consumer": consumer } });

describe("a cost budget on an async type", () => {
  async function runJob(g: LimitsRuntime, seconds: number): Promise<void> {
    expect((await submit(g, "alice")).status).toBe(202);
    await g.relayRound();
    await until(() => g.backend.waiting.length === 1, "the relay's backend call");
    g.clock.advance(seconds * 1000);
    g.backend.answerAll();
    await g.relayIdle();
  }
  const windowCost = async (g: LimitsRuntime) => Number((await g.kv.get("cost:transcription:alice")) ?? "0");

  it("counts each job's processing cost; the crossing job passes, the next submission gets 429 naming the budget", async () => {
    const g = (gw = await limitsRuntime(CONFIG, { plugins: [pricing] }));
    await runJob(g, 45);
    await until(async () => (await windowCost(g)) === toNanos(0.45), "0.45 counted");
    await runJob(g, 30);
    await until(async () => (await windowCost(g)) === toNanos(0.75), "0.75 counted");

    const refused = await submit(g, "alice");
    expect(refused.status).toBe(429);
    // The window opened when the first job ended; 30 s of its hour have passed.
    expect(refused.headers.get("retry-after")).toBe(String(3600 - 30));
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'cost budget of service type "transcription" used up: 0.75 of 0.5 EUR per 1h; retry in 3570s, when the window resets',
    );
    const usage = (await (await g.request("/usage", { headers: { "x-consumer": "alice" } })).json()) as { usage: unknown[] };
    expect(usage.usage).toEqual([
      {
        service_type: "transcription",
        total: { requests: 2, jobs: 2, processing_time_seconds: 75, cost: 0.75 },
        window: { cost: 0.75, reset_at: new Date(g.clock.now() + (3600 - 30) * 1000).toISOString() },
      },
    ]);
    expect((await submit(g, "bob")).status).toBe(202);
  });
});

describe("a budget of any owner (judgeCost, checkCostBudget, addCost)", () => {
  const budget = { key: "cost:key:k1", limitNanos: toNanos(2), periodMs: 3_600_000, scope: 'API key "k1"' };
  it("allows under the limit, refuses at or over it with the window's remaining seconds", () => {
    expect(judgeCost(budget, "", -2, "USD")).toEqual({ allowed: true, usedNanos: 0 });
    expect(judgeCost(budget, toNanos(1.999999), 1000, "USD")).toEqual({ allowed: true, usedNanos: 1_999_999_000 });
    expect(judgeCost(budget, String(toNanos(2.5)), 42_000, "USD")).toEqual({
      allowed: false,
      usedNanos: 2_500_000_000,
      retryAfterSeconds: 42,
      message: 'cost budget of API key "k1" used up: 2.5 of 2 USD per 1h; retry in 42s, when the window resets',
    });
  });

  it("checkCostBudget reads a window addCost filled: allowed until the limit, then refused until the window ends", async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const kv = new MemoryKv(clock);
    try {
      expect(await checkCostBudget(kv, budget, "USD")).toEqual({ allowed: true, usedNanos: 0 });
      await addCost(kv, budget, toNanos(1.5));
      clock.advance(600_000);
      await addCost(kv, budget, toNanos(0.75));
      expect(await checkCostBudget(kv, budget, "USD")).toMatchObject({ allowed: false, usedNanos: toNanos(2.25), retryAfterSeconds: 3000 });
      clock.advance(3_000_000);
      expect(await checkCostBudget(kv, budget, "USD")).toEqual({ allowed: true, usedNanos: 0 });
    } finally {
      await kv.close();
    }
  });
});

describe("cost budget config", () => {
  it("refuses a cost_rate while no model has a price, and a cost_period of 0s", () => {
    const yaml = `
rate_limits:
  chat:
    "*": { cost_rate: 1, cost_period: 0s }
services:
  - type: chat
    model: m
    inference_url: http://backend
    token_limits:
      "*": { cost_rate: 1 }
`;
    expect(() => loadConfig(yaml, {})).toThrow(
      [
        "rate_limits.chat.*.cost_period: must be positive when cost_rate is set",
        "rate_limits.chat.*.cost_rate: a cost budget needs prices: set pricing.models (or pricing.backend_models), or remove cost_rate",
        "services[0].token_limits.*.cost_rate: a cost budget needs prices: set pricing.models (or pricing.backend_models), or remove cost_rate",
      ].join("\n  "),
    );
    expect(() => loadConfig(`pricing:\n  models:\n    m: {}\n`, {})).toThrow(
      "pricing.models.m: no price set; give at least one of input, output, cached_input, cache_write, per_second (or remove the entry)",
    );
  });
});
