/**
 * Which limits measure a request (docs/design.md#request-rate and docs/design.md#token-budget): the
 * user type's entry, else "*", else none.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { LimitTable } from "../../../plugins/limits/table.ts";

function table(yaml: string): LimitTable {
  return new LimitTable(loadConfig(yaml, {}).config);
}

const CONFIG = `
rate_limits:
  chat:
    "*": { rate: 10, period: 1m, token_rate: 1000, token_period: 1h }
    premium: { rate: 100, period: 30s }
    free: { rate: 0 }
  transcription:
    premium: { max_concurrent: 4, processing_time: 600, processing_period: 24h }
    basic: { processing_time: 60, processing_period: 1h }
services:
  - type: chat
    model: small
    inference_url: http://backend
    token_limits:
      "*": { token_rate: 50, token_period: 10m }
      premium: { token_rate: 500 }
      free: { token_rate: 0 }
  - type: chat
    model: big
    inference_url: http://backend
  - type: chat
    model: odd
    inference_url: http://backend
    token_limits:
      "*": { token_rate: 5, token_period: "0s" }
`;

describe("LimitTable", () => {
  const limits = table(CONFIG);

  it("uses the user type's own entry", () => {
    expect(limits.forType("chat", "premium")).toMatchObject({ entry: "premium", rate: 100, periodMs: 30_000, tokenRate: 0 });
  });

  it('falls back to "*" for an absent or unlisted user type', () => {
    expect(limits.forType("chat", undefined)).toMatchObject({ entry: "*", rate: 10, periodMs: 60_000, tokenRate: 1000, tokenPeriodMs: 3_600_000 });
    expect(limits.forType("chat", "student")).toMatchObject({ entry: "*" });
  });

  it("keeps an entry with rate 0 (unlimited) instead of falling back", () => {
    expect(limits.forType("chat", "free")).toMatchObject({ entry: "free", rate: 0 });
  });

  it('applies no limit when neither the user type nor "*" has an entry, or the type has none', () => {
    expect(limits.forType("transcription", "student")).toBeUndefined();
    expect(limits.forType("transcription", undefined)).toBeUndefined();
    expect(limits.forType("unknown", "premium")).toBeUndefined();
  });

  it("resolves model token budgets with the same fallback, per model", () => {
    expect(limits.forModel({ type: "chat", model: "small" }, "premium")).toEqual({
      entry: "premium",
      tokenRate: 500,
      tokenPeriodMs: 60_000,
      costNanos: 0,
      costPeriodMs: 86_400_000,
    });
    expect(limits.forModel({ type: "chat", model: "small" }, "basic")).toMatchObject({ entry: "*", tokenRate: 50, tokenPeriodMs: 600_000 });
    // token_rate 0 is off for that user type: no model budget, and no fall back to "*" (as rate: 0).
    expect(limits.forModel({ type: "chat", model: "small" }, "free")).toBeUndefined();
    expect(limits.forModel({ type: "chat", model: "big" }, "premium")).toBeUndefined();
  });

  it('labels metrics with the caller\'s user type when the limits config names it anywhere, else "*"', () => {
    // Named by its own entry, by another service type's entry, or by a model's token_limits.
    expect(limits.userTypeLabel("premium")).toBe("premium");
    expect(limits.userTypeLabel("basic")).toBe("basic");
    expect(
      table(`${CONFIG}\n  - type: chat\n    model: extra\n    inference_url: http://backend\n    token_limits:\n      tier9: { token_rate: 5 }`).userTypeLabel(
        "tier9",
      ),
    ).toBe("tier9");
    // Absent, or a value the config never names: one bounded "*" series.
    expect(limits.userTypeLabel(undefined)).toBe("*");
    expect(limits.userTypeLabel("student")).toBe("*");
    expect(limits.userTypeLabel("*")).toBe("*");
  });

  it('uses the schema default window for a model budget of "0s" (a window that expires as it opens limits nothing)', () => {
    expect(limits.forModel({ type: "chat", model: "odd" }, undefined)).toMatchObject({ entry: "*", tokenRate: 5, tokenPeriodMs: 60_000 });
  });
});
