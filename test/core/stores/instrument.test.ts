/**
 * The store wrapper that counts failed operations (core/stores/instrument.ts): each failure
 * counted by operation and rethrown unchanged, everything else of the store reached as it is,
 * and a method replaced on the store after wrapping (as tests do to make a store fail) used.
 */
import { expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { silentLogger } from "../../../core/log.ts";
import { Metrics } from "../../../core/metrics.ts";
import { windowIncrement } from "../../../core/stores/atomic-ops.ts";
import { instrumentKv } from "../../../core/stores/instrument.ts";
import { metricValue } from "../../support/prometheus.ts";

it("counts each failed operation by name, rethrows it, and passes everything else through", async () => {
  const metrics = new Metrics();
  const store = new MemoryKv(new ManualClock());
  const kv = instrumentKv(store, metrics, silentLogger);
  expect(kv.kind).toBe("memory");
  expect(kv).toBeInstanceOf(MemoryKv);

  await kv.set("text", "not a number");
  expect(await kv.get("text")).toBe("not a number");
  expect(await kv.run(windowIncrement, ["count"], [2, 60_000])).toEqual([2, 60_000]);
  await expect(kv.incrBy("text", 1)).rejects.toThrow(/not an integer/);
  await expect(kv.run(windowIncrement, ["text"], [1, 60_000])).rejects.toThrow(/not an integer/);

  const original = store.run.bind(store);
  store.run = () => Promise.reject(new Error("connection refused"));
  await expect(kv.run(windowIncrement, ["count"], [1, 60_000])).rejects.toThrow("connection refused");
  store.run = original;
  expect(await kv.run(windowIncrement, ["count"], [1, 60_000])).toEqual([3, 60_000]);

  const text = await metrics.text();
  expect(metricValue(text, "svc_kv_store_errors_total", { op: "incrBy" })).toBe(1);
  expect(metricValue(text, "svc_kv_store_errors_total", { op: "run" })).toBe(2);
  expect(metricValue(text, "svc_kv_store_errors_total", { op: "get" })).toBe(0);
});
