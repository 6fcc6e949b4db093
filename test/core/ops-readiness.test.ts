/**
 * `GET /health?ready=1` answers within its bound when a store's ping never settles (a frozen
 * Redis, an S3 endpoint that accepts and never answers): 503 naming the silent store.
 * Time is driven by fake timers, so the bound is exercised without waiting for it.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../core/clock.ts";
import { Metrics } from "../../core/metrics.ts";
import { createOpsApp, READINESS_CHECK_TIMEOUT_MS } from "../../core/ops.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";

afterEach(() => {
  vi.useRealTimers();
});

const answering = { ping: async () => {} } as Pick<ObjectStore, "ping"> as ObjectStore;
const silent = { ping: () => new Promise<void>(() => {}) } as Pick<ObjectStore, "ping"> as ObjectStore;

describe("readiness with a store that never answers", () => {
  it.each([
    { store: "kv", kv: { ping: () => new Promise<void>(() => {}) } as Pick<KvStore, "ping"> as KvStore, objects: answering },
    { store: "objects", kv: new MemoryKv(new ManualClock()) as KvStore, objects: silent },
  ])("answers 503 naming $store once the bound has passed", async ({ store, kv, objects }) => {
    vi.useFakeTimers();
    const app = createOpsApp({ kv, objects, metrics: new Metrics() });
    let settled = false;
    const pending = Promise.resolve(app.request("/health?ready=1")).then((response) => {
      settled = true;
      return response;
    });
    await vi.advanceTimersByTimeAsync(READINESS_CHECK_TIMEOUT_MS - 1);
    expect(settled).toBe(false);
    // The bound, then the second look on the next turn (core/deadline.ts).
    await vi.advanceTimersByTimeAsync(2);
    const response = await pending;
    expect(response.status).toBe(503);
    const body = (await response.json()) as { status: string; checks: Record<string, string> };
    expect(body.status).toBe("unavailable");
    expect(body.checks[store]).toBe(`down: no answer within ${READINESS_CHECK_TIMEOUT_MS} ms`);
    expect(Object.values(body.checks).filter((v) => v === "ok")).toHaveLength(1);
  });
});
