/**
 * The sync concurrency cap (docs/design.md#sync-concurrency-cap): `max_concurrent_sync`
 * simultaneous sync-direct and LLM-proxy requests per model across every replica, as counters in
 * the shared store. `priority_reserved_sync = R` splits the slots: non-priority requests share
 * `max - R`; priority requests take a reserved one first, then a shared one. When every
 * slot they may use is busy the answer is 503 at once (no queue). The slot is given back
 * before the client has its whole answer (before the last byte of the body goes out), or
 * when the client went away. Store errors fail open.
 *
 * A batch line yields to the interactive traffic: it takes a shared slot only while at least
 * half of the shared slots are free (one, when there is a single shared slot) and never a
 * reserved one; when it cannot, its 503 tells the batch to run it again a moment later.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { semaphoreRelease } from "../../core/stores/atomic-ops.ts";
import { failOpen, type LimitDeps } from "./deps.ts";
import { limitKeys } from "./keys.ts";
import { semaphoreAcquireFirst } from "./ops.ts";

/**
 * docs/design.md#constants: a slot counter outlives a crashed replica's slots by at most this long.
 */
export const SLOT_SAFETY_TTL_MS = 30 * 60 * 1000;

interface Pools {
  keys: string[];
  /** ARGV of `semaphoreAcquireFirst`: the safety TTL, then each pool's size. */
  args: number[];
}

interface ServicePools {
  normal: Pools;
  priority: Pools;
  batch: Pools;
}

function poolsOf(service: ServiceConfig): ServicePools {
  const max = service.max_concurrent_sync;
  const reserved = Math.min(service.priority_reserved_sync, max);
  const shared = { key: limitKeys.syncShared(service.type, service.model), size: max - reserved };
  const reservedPool = { key: limitKeys.syncReserved(service.type, service.model), size: reserved };
  const build = (list: { key: string; size: number }[]): Pools => {
    const usable = list.filter((pool) => pool.size > 0);
    return { keys: usable.map((pool) => pool.key), args: [SLOT_SAFETY_TTL_MS, ...usable.map((pool) => pool.size)] };
  };
  return {
    normal: build([shared]),
    priority: build([reservedPool, shared]),
    batch: build([{ key: shared.key, size: Math.min(shared.size, Math.max(1, Math.floor(shared.size / 2))) }]),
  };
}

export function syncCap(deps: LimitDeps) {
  // Per runtime, so built once per service of this config.
  const cache = new WeakMap<ServiceConfig, ServicePools>();

  return async function acquireSyncSlot(ctx: RequestContext, service: ServiceConfig): Promise<void> {
    if (service.max_concurrent_sync === 0) return;
    let pools = cache.get(service);
    if (!pools) {
      pools = poolsOf(service);
      cache.set(service, pools);
    }
    const { keys, args } = ctx.origin === "batch" ? pools.batch : ctx.priority ? pools.priority : pools.normal;
    const busy = () =>
      errors.concurrencyCap(
        `model "${service.model || service.type}" is at its concurrency cap (max_concurrent_sync ${service.max_concurrent_sync}${
          service.priority_reserved_sync > 0 ? `, ${Math.min(service.priority_reserved_sync, service.max_concurrent_sync)} reserved for priority requests` : ""
        }); retry shortly`,
      );
    // Every slot is reserved and this request is not a priority one.
    if (keys.length === 0) throw busy();
    let taken: number;
    try {
      taken = await deps.kv.run(semaphoreAcquireFirst, keys, args);
    } catch (error) {
      return failOpen(deps, "rate", "sync_concurrency", service.type, error);
    }
    if (taken === 0) throw busy();
    const key = keys[taken - 1];
    // Given back before the client has its whole answer (not after the response is written),
    // so a client that reads its answer and sends the next request finds the slot free.
    ctx.beforeEnd(async () => {
      try {
        await deps.kv.run(semaphoreRelease, [key], []);
      } catch (error) {
        deps.log.warn("sync_slot_release_failed", { model: service.model, error, message: "the slot frees itself after the safety TTL" });
      }
    });
  };
}
