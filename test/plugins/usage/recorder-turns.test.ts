/**
 * What one turn of the usage recorder gathers lands where each event belongs: a turn that
 * crosses midnight UTC writes each day's counts to that day's buckets and groups, and the
 * tokens a request's answers left for two models are grouped under each model. Memory store,
 * manual clock.
 */
import { expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { silentLogger } from "../../../core/log.ts";
import type { LlmUsageEvent } from "../../../core/llm/usage.ts";
import { UsageRecorder } from "../../../plugins/usage/recorder.ts";
import { usageReport } from "../../../plugins/usage/report.ts";

const BEFORE_MIDNIGHT = Date.UTC(2026, 2, 10, 23, 59, 59, 900);
const DAY = 86_400_000;

const usage = (model: string, prompt: number, completion: number): LlmUsageEvent => ({
  serviceType: "chat",
  model,
  consumer: "team",
  userType: "",
  prompt,
  completion,
  counted: true,
});

function report(kv: MemoryKv, day: string, dayMs: number) {
  return usageReport(kv, [], { type: "chat", period: "daily", from: day, to: day, fromMs: dayMs, toMs: dayMs, total: true, groupBy: "model" }, false);
}

it("writes a turn that crosses midnight to each day's buckets and groups", async () => {
  const clock = new ManualClock(BEFORE_MIDNIGHT);
  const kv = new MemoryKv(clock);
  const recorder = new UsageRecorder({ kv, clock, log: silentLogger, retentionMs: 0 });
  recorder.tokens(usage("small", 10, 5));
  const first = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "small" }, 200);
  clock.advance(200);
  recorder.tokens(usage("small", 3, 1));
  const second = recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "small" }, 200);
  recorder.requestEnded({ mode: "sync", origin: "client", serviceType: "chat", consumer: "other", model: "small" }, 200);
  await Promise.all([first, second]);

  const before = await report(kv, "2026-03-10", BEFORE_MIDNIGHT - (BEFORE_MIDNIGHT % DAY));
  expect(before.total).toMatchObject({ requests: 1, tokens: { prompt: 10, completion: 5 } });
  expect(before.groups).toEqual([{ key: "small", requests: 1, tokens: 15, cost: 0 }]);
  const after = await report(kv, "2026-03-11", BEFORE_MIDNIGHT - (BEFORE_MIDNIGHT % DAY) + DAY);
  expect(after.total).toMatchObject({ requests: 2, tokens: { prompt: 3, completion: 1 } });
  expect(after.groups).toEqual([{ key: "small", requests: 2, tokens: 4, cost: 0 }]);
});

it("groups the tokens a request left for two models under each model, and the request under its own", async () => {
  const clock = new ManualClock(BEFORE_MIDNIGHT - DAY / 2);
  const kv = new MemoryKv(clock);
  const recorder = new UsageRecorder({ kv, clock, log: silentLogger, retentionMs: 0 });
  recorder.tokens(usage("small", 10, 5));
  recorder.tokens(usage("big", 20, 10));
  recorder.tokens(usage("small", 1, 1));
  await recorder.requestEnded({ mode: "llm", origin: "client", serviceType: "chat", consumer: "team", model: "small" }, 200);

  const day = await report(kv, "2026-03-10", BEFORE_MIDNIGHT - (BEFORE_MIDNIGHT % DAY));
  expect(day.total).toMatchObject({ requests: 1, tokens: { prompt: 31, completion: 16 } });
  expect(day.groups).toEqual([
    { key: "small", requests: 1, tokens: 17, cost: 0 },
    { key: "big", requests: 0, tokens: 30, cost: 0 },
  ]);
});
