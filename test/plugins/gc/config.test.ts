/**
 * The startup refusal: `redis.pending_max_age` must be shorter than the input
 * object lifetime, the pending job TTL. The gc plugin's config rule reads that lifetime from
 * the job store's config facts (a plugin reads no other plugin's settings), so these tests also
 * hold it to async-jobs' own TTL rule.
 */
import { describe, expect, it } from "vitest";
import { formatDuration } from "../../../core/config/duration.ts";
import { validateConfig } from "../../../plugins/config.ts";
import { fieldsOf, type GatewayConfig } from "../../../core/config/schema.ts";
import { jobLifetimeFields } from "../../../plugins/async-jobs/config.ts";
import { jobTtlMs } from "../../../plugins/async-jobs/ttl.ts";
import { gcActive, gcSettings, MIN_INTERVAL_MS } from "../../../plugins/gc/settings.ts";

function problems(redis: Record<string, unknown>, jobTtl: Record<string, string> = {}): string[] {
  const result = validateConfig({ redis, lifecycle: { job_ttl: jobTtl } });
  return result.ok ? [] : result.problems;
}

function config(raw: Record<string, unknown>): GatewayConfig {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(result.problems.join("\n"));
  return result.config;
}

describe("redis.pending_max_age refusal", () => {
  it("refuses a value not shorter than the 2h safety net when no TTL is set", () => {
    expect(problems({ pending_max_age: "2h" })).toEqual([
      "redis.pending_max_age: 2h is not shorter than the input object lifetime, 2h (the pending job TTL: lifecycle.job_ttl.pending, " +
      "else lifecycle.job_ttl.global, else the 2h safety net); lower pending_max_age or raise lifecycle.job_ttl.pending",
    ]);
    expect(problems({ pending_max_age: "1h59m" })).toEqual([]);
  });

  it("measures against job_ttl.pending first, then job_ttl.global", () => {
    expect(problems({ pending_max_age: "30m" }, { pending: "30m", global: "24h" })[0]).toMatch(/^redis\.pending_max_age: 30m .* 30m /);
    expect(problems({ pending_max_age: "29m" }, { pending: "30m", global: "24h" })).toEqual([]);
    expect(problems({ pending_max_age: "5h" }, { global: "6h" })).toEqual([]);
    expect(problems({ pending_max_age: "6h" }, { global: "6h" })).toHaveLength(1);
    // job_ttl.completed is not the input's lifetime.
    expect(problems({ pending_max_age: "3h" }, { completed: "24h" })).toHaveLength(1);
  });

  it("accepts the sweep switched off", () => {
    expect(problems({ pending_max_age: "" })).toEqual([]);
    expect(problems({ pending_max_age: "0s" })).toEqual([]);
  });

  it("reports a malformed duration once, from the schema", () => {
    const found = problems({ pending_max_age: "3d" });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^redis\.pending_max_age: .*"d" suffix/);
  });

  it("uses the same lifetime as the job store's pending TTL", () => {
    const cases: Record<string, string>[] = [{}, { global: "45m" }, { pending: "10m", global: "1h" }, { pending: "36h" }, { failed: "5m" }];
    for (const jobTtl of cases) {
      const lifetime = jobTtlMs(fieldsOf(config({ lifecycle: { job_ttl: jobTtl } }), jobLifetimeFields), "pending");
      expect(problems({ pending_max_age: formatDuration(lifetime) }, jobTtl)).toHaveLength(1);
      expect(problems({ pending_max_age: formatDuration(lifetime - 1000) }, jobTtl)).toEqual([]);
    }
  });
});

describe("gc settings", () => {
  it("turns the plugin on for gc.enabled or a pending_max_age, and reads the spec defaults", () => {
    expect(gcActive(config({}))).toBe(false);
    expect(gcActive(config({ lifecycle: { gc: { enabled: true } } }))).toBe(true);
    expect(gcActive(config({ redis: { pending_max_age: "10m" } }))).toBe(true);
    expect(gcSettings(config({ lifecycle: { gc: { enabled: true } } }))).toEqual({
      enabled: true,
      intervalMs: 15 * 60_000,
      orphanMinAgeMs: 5 * 60_000,
      maxReapAttempts: 3,
      pendingMaxAgeMs: 0,
    });
  });

  it("never ticks faster than once a second", () => {
    expect(gcSettings(config({ lifecycle: { gc: { enabled: true, interval: "0s" } } })).intervalMs).toBe(MIN_INTERVAL_MS);
  });
});
