/**
 * Repeated warnings and errors are collapsed (core/log.ts): an identical line is written
 * once, then one summary line with a count per window, while the metrics still count every
 * occurrence; lines that differ in any field are never merged. The log's clock is a ManualClock and the summary timer a fake timer, both
 * moved by hand.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../core/clock.ts";
import { createLogger, type LogEntry, type Logger, MAX_REPEAT_WINDOWS, REPEAT_WINDOW_MS } from "../../core/log.ts";
import { Metrics } from "../../core/metrics.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import { instrumentKv } from "../../core/stores/instrument.ts";
import { metricValue } from "../support/prometheus.ts";

type Line = Record<string, unknown>;

let clock: ManualClock;
let lines: Line[];
let log: Logger;

beforeEach(() => {
  vi.useFakeTimers();
  clock = new ManualClock();
  lines = [];
  log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Line), now: () => clock.now(), base: { role: "gateway" } });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Moves the log's clock and its timers together. */
function advance(ms: number): void {
  clock.advance(ms);
  vi.advanceTimersByTime(ms);
}

const failingKv = { get: async () => Promise.reject(new Error("Redis at 127.0.0.1:6379 did not answer GET within 500 ms")) } as Pick<KvStore, "get"> as KvStore;

describe("repeated log events", () => {
  it("writes a burst of 1000 identical store errors as one line plus one count line, while the metric counts 1000", async () => {
    const metrics = new Metrics();
    const kv = instrumentKv(failingKv, metrics, log);
    for (let i = 0; i < 1000; i++) await expect(kv.get(`k${i}`)).rejects.toThrow(/did not answer/);

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "warn", event: "store_error", op: "get", error: { message: expect.stringContaining("did not answer GET") } });
    expect(lines[0]).not.toHaveProperty("repeated");

    advance(REPEAT_WINDOW_MS);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      level: "warn",
      event: "store_error",
      op: "get",
      role: "gateway",
      repeated: 999,
      repeated_since: new Date(clock.now() - REPEAT_WINDOW_MS).toISOString(),
      time: new Date(clock.now()).toISOString(),
    });
    expect(metricValue(await metrics.text(), "svc_kv_store_errors_total", { op: "get" })).toBe(1000);

    // Nothing more once the burst is over; the next occurrence after a quiet window is written in full.
    advance(REPEAT_WINDOW_MS * 3);
    expect(lines).toHaveLength(2);
    await expect(kv.get("again")).rejects.toThrow();
    expect(lines).toHaveLength(3);
    expect(lines[2]).not.toHaveProperty("repeated");
  });

  it("writes one summary per window while the line keeps coming", () => {
    for (let second = 0; second < 25; second++) {
      for (let i = 0; i < 10; i++) log.warn("limit_store_error", { limit: "request_rate", service_type: "echo" });
      advance(1_000);
    }
    // 250 occurrences over 25 s: the first in full, summaries at 10 s and 20 s, the rest pending.
    expect(lines.map((line) => line.repeated)).toEqual([undefined, 99, 100]);
    expect(lines[1]).toMatchObject({ event: "limit_store_error", limit: "request_rate", service_type: "echo", role: "gateway" });
    advance(REPEAT_WINDOW_MS);
    expect(lines.map((line) => line.repeated)).toEqual([undefined, 99, 100, 50]);
    const represented = lines.reduce((sum, line) => sum + (typeof line.repeated === "number" ? line.repeated : 1), 0);
    expect(represented).toBe(250);
  });

  it("settles a window at the next occurrence when the clock has passed it before the timer ran", () => {
    log.error("kv_store_connection_error", { addr: "cache:6379" });
    log.error("kv_store_connection_error", { addr: "cache:6379" });
    log.error("kv_store_connection_error", { addr: "cache:6379" });
    clock.advance(REPEAT_WINDOW_MS); // the clock only: the timer has not fired
    log.error("kv_store_connection_error", { addr: "cache:6379" });
    expect(lines).toEqual([
      expect.objectContaining({ level: "error", addr: "cache:6379" }),
      expect.objectContaining({ level: "error", addr: "cache:6379", repeated: 3 }),
    ]);
    // A window that ended with nothing held back: the next occurrence is written in full.
    clock.advance(REPEAT_WINDOW_MS);
    log.error("kv_store_connection_error", { addr: "cache:6379" });
    expect(lines).toHaveLength(3);
    expect(lines[2]).not.toHaveProperty("repeated");
  });

  it("never merges lines that differ in a field, a level or a logger's own fields", () => {
    const limits = log.child({ plugin: "limits" });
    const jobs = log.child({ plugin: "async-jobs" });
    jobs.error("job_save_failed", { job_id: "a" });
    jobs.error("job_save_failed", { job_id: "b" });
    jobs.warn("job_save_failed", { job_id: "a" });
    limits.warn("store_error", { op: "run" });
    jobs.warn("store_error", { op: "run" });
    limits.warn("store_error", { op: "run" });
    expect(lines.map((line) => `${line.level} ${line.event} ${line.plugin} ${line.job_id ?? line.op}`)).toEqual([
      "error job_save_failed async-jobs a",
      "error job_save_failed async-jobs b",
      "warn job_save_failed async-jobs a",
      "warn store_error limits run",
      "warn store_error async-jobs run",
    ]);
    advance(REPEAT_WINDOW_MS);
    expect(lines.slice(5)).toEqual([expect.objectContaining({ event: "store_error", plugin: "limits", repeated: 1 })]);
  });

  it("tracks a bounded number of distinct lines, writing the ones past the bound as they come", () => {
    for (let i = 0; i < MAX_REPEAT_WINDOWS; i++) log.warn("job_save_failed", { job_id: String(i) });
    log.warn("job_save_failed", { job_id: "untracked" });
    log.warn("job_save_failed", { job_id: "untracked" });
    log.warn("job_save_failed", { job_id: "0" });
    expect(lines).toHaveLength(MAX_REPEAT_WINDOWS + 2);
    advance(REPEAT_WINDOW_MS);
    expect(lines.slice(MAX_REPEAT_WINDOWS + 2)).toEqual([expect.objectContaining({ job_id: "0", repeated: 1 })]);
  });

  it("never collapses info lines (audit and job records)", () => {
    for (let i = 0; i < 50; i++) log.info("audit", { n: i });
    expect(lines).toHaveLength(50);
  });

  it("hands taps the lines written, summaries included, not the ones held back", () => {
    const tapped: LogEntry[] = [];
    log.tap((entry) => tapped.push(entry));
    for (let i = 0; i < 5; i++) log.warn("store_error", { op: "get" });
    advance(REPEAT_WINDOW_MS);
    expect(tapped.map((entry) => entry.fields.repeated)).toEqual([undefined, 4]);
  });

  it("writes every line with a window of 0", () => {
    const all: string[] = [];
    const plain = createLogger({ write: (line) => all.push(line), repeatWindowMs: 0 });
    for (let i = 0; i < 20; i++) plain.warn("store_error");
    expect(all).toHaveLength(20);
  });
});
