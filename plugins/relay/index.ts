/**
 * The relay worker (docs/design.md#the-relay): takes queued jobs, calls the backend and stores the
 * result. It always runs in `npm run relay` processes; in the gateway process when
 * `relay.embedded` is true, or when it is unset and the KV store is the embedded one
 * (a standalone relay could not reach an in-memory queue).
 */
import { durationMs } from "../../core/config/duration.ts";
import type { GatewayConfig } from "../../core/config/schema.ts";
import { redisModeOf } from "../../core/config/redis-mode.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { relaySection, relayServiceFields } from "./config.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { jobTrace } from "./job-trace.ts";
import { relayMetrics } from "./metrics.ts";
import { RelaySlots } from "./slots.ts";
import { RelayWorker } from "./worker.ts";

/**
 * The relay slots of each process, shared by the workers of successive runtimes (a reload's
 * new worker and the replaced one finishing its jobs). Keyed by the KV store object, which
 * the gateway opens once and keeps across reloads.
 */
const processSlots = new WeakMap<KvStore, RelaySlots>();

function slotsOf(kv: KvStore): RelaySlots {
  let slots = processSlots.get(kv);
  if (!slots) {
    slots = new RelaySlots();
    processSlots.set(kv, slots);
  }
  return slots;
}

/** Pause between polling rounds when every queue is empty. */
export const POLL_INTERVAL_MS = 150;

/** The relay of this process, for health checks and tests. */
export interface RelayService {
  /** Jobs running now. */
  readonly busy: number;
  /** Resolves when no job is running. */
  idle(): Promise<void>;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    relay: RelayService;
  }
}

export function relayEmbedded(config: GatewayConfig): boolean {
  return config.relay.embedded ?? redisModeOf(config.redis) === undefined;
}

export default definePlugin({
  name: "relay",
  section: relaySection,
  serviceFields: relayServiceFields,
  roles: ["gateway", "relay"],
  dependsOn: ["async-jobs"],
  // A job's trace continues in the relay when tracing is on; jobs are priced when some model has a price.
  optionalDependsOn: ["otel", "pricing"],
  enabled: (config, role) => role === "relay" || relayEmbedded(config),
  setup(api) {
    const jobs = api.use("jobs");
    const leaseMs = api.config.relay.lease_seconds * 1000;
    const worker = new RelayWorker(
      jobs,
      {
        jobs,
        objects: api.objects,
        fetch: api.fetch,
        clock: api.clock,
        newId: () => api.ids.newId(),
        log: api.log,
        metrics: relayMetrics(api.metrics),
        emit: (event, payload) => api.emit(event, payload),
        pricing: api.has("pricing") ? api.use("pricing") : undefined,
        leaseMs,
        requestTimeoutMs: durationMs(api.config.relay.request_timeout) || durationMs("10m"),
        inJobTrace: jobTrace(api),
      },
      { concurrency: api.config.relay.concurrency, leaseMs, slots: slotsOf(api.kv) },
      api.log,
    );
    api.provide("relay", {
      get busy() {
        return worker.busy;
      },
      idle: () => worker.idle(),
    });
    // Logged by the first poll, not at setup: a gateway that fails to listen never starts its tasks.
    let announced = false;
    const poll = (signal: AbortSignal) => {
      if (!announced) {
        announced = true;
        api.log.info("relay_started", { concurrency: api.config.relay.concurrency, lease_seconds: api.config.relay.lease_seconds });
      }
      return worker.poll(signal);
    };
    api.task({ name: "relay", everyMs: POLL_INTERVAL_MS, runAtStart: true, run: poll });
    // A reload lets running jobs finish (a long transcription is not restarted); shutdown
    // gives them DRAIN_GRACE_MS, then requeues the rest.
    api.onRetire(() => worker.retire());
    api.onClose(() => worker.close());
  },
});
