/**
 * The usage recorder keeps the tokens and cost of two API keys of one consumer apart when
 * their requests overlap (each answer's `llm.usage` comes before its request ends), so
 * `/-/usage/report?group_by=key` credits each key with its own; a request without a key is
 * grouped under its consumer. Memory store, manual clock: the order of events is the test's.
 */
import { expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { silentLogger } from "../../../core/log.ts";
import type { LlmUsageEvent } from "../../../core/llm/usage.ts";
import { UsageRecorder } from "../../../plugins/usage/recorder.ts";
import { usageReport } from "../../../plugins/usage/report.ts";

const NOW = Date.UTC(2026, 2, 10, 12);

/** The day's chat report with its total, grouped by `groupBy`. */
const todaysReport = (kv: MemoryKv, groupBy: "key" | "mode", pricingOn: boolean) =>
  usageReport(kv, [], { type: "chat", period: "daily", from: "2026-03-10", to: "2026-03-10", fromMs: NOW, toMs: NOW, total: true, groupBy }, pricingOn);

it("credits overlapping requests of two keys of one consumer to their own keys; no key: the consumer", async () => {
  const clock = new ManualClock(NOW);
  const kv = new MemoryKv(clock);
  const recorder = new UsageRecorder({ kv, clock, log: silentLogger, retentionMs: 0 });
  const usage = (model: string, prompt: number, completion: number, cost: number, keyId?: string): LlmUsageEvent => ({
    serviceType: "chat",
    model,
    consumer: "team",
    userType: "",
    prompt,
    completion,
    cost,
    counted: true,
    ...(keyId !== undefined ? { keyId } : {}),
  });
  // Both answers' usage first, then both requests end (overlapping requests).
  recorder.tokens(usage("cheap", 11, 7, 0.000078, "key_a"));
  recorder.tokens(usage("dear", 11, 7, 0.00025, "key_b"));
  recorder.tokens(usage("cheap", 1, 1, 0.000001));
  const a = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "cheap", key: "key_a" }, 200);
  const b = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "dear", key: "key_b" }, 200);
  const none = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "cheap" }, 200);
  await Promise.all([a, b, none]);
  await recorder.flush();

  const report = await todaysReport(kv, "key", true);
  expect(report.groups).toEqual([
    { key: "key_b", requests: 1, tokens: 18, cost: 0.00025 },
    { key: "key_a", requests: 1, tokens: 18, cost: 0.000078 },
    { key: "team", requests: 1, tokens: 2, cost: 0.000001 },
  ]);
  expect(report.total).toMatchObject({ requests: 3, cost: 0.000329 });
});

it("keeps a batch line's tokens in the batch mode when a client's request of the same consumer and key ends with it", async () => {
  const clock = new ManualClock(NOW);
  const kv = new MemoryKv(clock);
  const recorder = new UsageRecorder({ kv, clock, log: silentLogger, retentionMs: 0 });
  const usage = (prompt: number, origin: "client" | "batch"): LlmUsageEvent => ({
    serviceType: "chat",
    model: "cheap",
    consumer: "team",
    userType: "",
    prompt,
    completion: 0,
    counted: true,
    origin,
  });
  // The client's answer and the batch line's answer in one turn, then the batch line ends first.
  recorder.tokens(usage(100, "client"));
  recorder.tokens(usage(5, "batch"));
  const line = recorder.requestEnded({ mode: "llm", origin: "batch", serviceType: "chat", consumer: "team", model: "cheap" }, 200);
  const client = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "cheap" }, 200);
  await Promise.all([line, client]);
  await recorder.flush();

  const report = await todaysReport(kv, "mode", false);
  expect(report.groups).toEqual([
    { key: "batch", requests: 1, tokens: 5, cost: 0 },
    { key: "interactive", requests: 1, tokens: 100, cost: 0 },
  ]);
});
