/**
 * The GC's parameters, read from one runtime's config. A reload builds a new runtime
 * (and a new GC task), so a changed value applies from the next tick (docs/design.md#hot-reload).
 */
import { durationMs } from "../../core/config/duration.ts";
import { fieldsOf, type GatewayConfig } from "../../core/config/schema.ts";
import type { ListEnd } from "../../core/stores/kv.ts";
import { pendingMaxAgeFields } from "./config.ts";

/** An interval of "0s" would spin; no sweep needs to run more often than this. */
export const MIN_INTERVAL_MS = 1_000;

/**
 * Where a reaped job goes back in its queue: the head, so it runs next. It has waited
 * longest (it was claimed once already), and priority jobs also enter at the head.
 */
export const REQUEUE_END: ListEnd = "head";

export interface GcSettings {
  /** `lifecycle.gc.enabled`: phases 0 (reaper), 2 (object orphans) and 3 (queue orphans). */
  enabled: boolean;
  intervalMs: number;
  orphanMinAgeMs: number;
  maxReapAttempts: number;
  /** `redis.pending_max_age`; phase 1 (stale-pending sweep) runs when > 0, whatever `enabled` says. */
  pendingMaxAgeMs: number;
}

export function gcSettings(config: GatewayConfig): GcSettings {
  const gc = config.lifecycle.gc;
  return {
    enabled: gc.enabled,
    intervalMs: Math.max(MIN_INTERVAL_MS, durationMs(gc.interval)),
    orphanMinAgeMs: durationMs(gc.orphan_min_age),
    maxReapAttempts: gc.max_reap_attempts,
    pendingMaxAgeMs: durationMs(fieldsOf(config, pendingMaxAgeFields).pending_max_age),
  };
}

/**
 * The GC task runs when any phase is on (docs/design.md#background-gc: phase 1 has its own switch).
 */
export function gcActive(config: GatewayConfig): boolean {
  const settings = gcSettings(config);
  return settings.enabled || settings.pendingMaxAgeMs > 0;
}
