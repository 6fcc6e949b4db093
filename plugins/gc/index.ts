/**
 * Background GC across replicas (docs/design.md#job-states and docs/design.md#background-gc): every
 * `lifecycle.gc.interval`,
 *   phase 0  reaps processing jobs whose relay lease expired (requeue or dead-letter),
 *   phase 1  fails pending jobs older than `redis.pending_max_age` and deletes their inputs,
 *   phase 2  deletes job files whose record is gone, once older than `gc.orphan_min_age`,
 *   phase 3  removes queue and processing entries whose record is gone.
 * Phases 0, 2 and 3 run when `lifecycle.gc.enabled`; phase 1 runs whenever
 * `redis.pending_max_age > 0`, so the plugin is on when either is set.
 *
 * It runs in gateway processes only: every replica runs it (the ops make that safe), and
 * a deployment always has gateways, while relays may scale to zero. A relay that runs the
 * gateway's plugins for its batch lines (`dispatches`) leaves it out too. Parameters come from
 * this runtime's config; a reload builds a new runtime, so they apply from its first tick.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { lifecycleSection, pendingMaxAgeFields } from "./config.ts";
import type { GcContext } from "./context.ts";
import { gcMetrics } from "./metrics.ts";
import { gcActive, gcSettings } from "./settings.ts";
import { runTick } from "./tick.ts";

export default definePlugin({
  name: "gc",
  section: lifecycleSection,
  sectionFields: [pendingMaxAgeFields],
  roles: ["gateway"],
  dependsOn: ["async-jobs"],
  enabled: (config, role) => role === "gateway" && gcActive(config),
  setup(api) {
    const settings = gcSettings(api.config);
    const ctx: GcContext = {
      kv: api.kv,
      objects: api.objects,
      jobs: api.use("jobs"),
      clock: api.clock,
      log: api.log,
      metrics: gcMetrics(api.metrics),
      settings,
      markerMs: api.use("jobs").markerTtl(),
      emitTerminal: (job) => api.emit("job.terminal", { job }),
      emitExpiry: (job, expiresAt) => api.emit("job.expiry", { job, expiresAt }),
    };
    // At start too: replicas restarted (or reloaded) more often than the interval still sweep.
    api.task({
      name: "gc",
      everyMs: settings.intervalMs,
      runAtStart: true,
      run: async (signal) => {
        await runTick(ctx, signal);
      },
    });
    api.log.info("gc_started", {
      interval_ms: settings.intervalMs,
      phases: settings.enabled ? (settings.pendingMaxAgeMs > 0 ? "0,1,2,3" : "0,2,3") : "1",
      max_reap_attempts: settings.maxReapAttempts,
      orphan_min_age_ms: settings.orphanMinAgeMs,
      pending_max_age_ms: settings.pendingMaxAgeMs,
    });
  },
});
