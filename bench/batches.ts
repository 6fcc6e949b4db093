/**
 * Batches end to end on the embedded stores: a batch of N chat lines is uploaded, created and
 * polled until completed; lines/s and gateway CPU per line are set against the interactive path
 * (the same chat requests sent one by one, 8 at a time, to the same mock backend). The interactive
 * latency is measured alone and again while the batch runs: a batch yields to interactive
 * traffic, so its p50/p99 should stay within 1.5x.
 */
import { performance } from "node:perf_hooks";
import { MODELS, PATHS } from "./config.ts";
import type { Target } from "./measure.ts";
import { cpuSeconds, memory, resetPeak, RssSampler } from "./procs.ts";

export interface Latency {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
  errors: number;
}

export interface BatchBenchResult {
  lines: number;
  seconds: number;
  linesPerSecond: number;
  cpuUsPerLine: number;
  peakRssMb: number;
  /** The interactive path alone, and while the batch runs. */
  interactive: Latency;
  interactiveDuringBatch: Latency;
  errors: number;
}

const INTERACTIVE_CONCURRENCY = 8;

const chatBody = (n: number) => ({ model: MODELS.chat, messages: [{ role: "user", content: `bench ${n}` }] });

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Chat requests, INTERACTIVE_CONCURRENCY at a time, until `count` were sent or `until` says stop. */
async function interactive(gateway: Target, count: number, until: () => boolean = () => false): Promise<Latency> {
  const times: number[] = [];
  let errors = 0;
  let sent = 0;
  const cpuBefore = cpuSeconds(gateway.pid);
  const worker = async () => {
    while (sent < count && !until()) {
      const n = sent++;
      const started = performance.now();
      try {
        // A unique body per request: every answer comes from the backend, not the cache.
        const response = await fetch(gateway.base + PATHS.chat, {
          method: "POST",
          headers: { "content-type": "application/json", "cache-control": "no-store" },
          body: JSON.stringify(chatBody(n)),
        });
        const text = await response.text();
        if (response.status !== 200 || !text.includes("chat.completion")) errors++;
      } catch {
        errors++;
      }
      times.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: INTERACTIVE_CONCURRENCY }, worker));
  const cpu = cpuSeconds(gateway.pid) - cpuBefore;
  times.sort((a, b) => a - b);
  return {
    requests: times.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    cpuUsPerRequest: (cpu / Math.max(1, times.length)) * 1e6,
    errors,
  };
}

export async function runBatchEndToEnd(gateway: Target, lines: number): Promise<BatchBenchResult> {
  // The interactive path alone first (after a warm-up), for the comparison.
  await interactive(gateway, 200);
  const alone = await interactive(gateway, Math.min(lines, 2000));

  const input = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `l${i}`, method: "POST", url: PATHS.chat, body: chatBody(lines + i) }))
    .join("\n");
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([input]), "bench.jsonl");
  const exact = resetPeak(gateway.pid);
  const sampler = new RssSampler(gateway.pid);
  sampler.start();
  const cpuBefore = cpuSeconds(gateway.pid);
  const started = performance.now();
  const file = (await (await fetch(`${gateway.base}/v1/files`, { method: "POST", body: form })).json()) as { id: string };
  const created = (await (await fetch(`${gateway.base}/v1/batches`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input_file_id: file.id, endpoint: PATHS.chat, completion_window: "24h" }),
  })).json()) as { id: string };
  let batch: { status?: string; request_counts?: { completed: number; failed: number } } = {};
  let done = false;
  // Interactive requests while the batch runs (their CPU is the gateway's too: measured apart below).
  const during = interactive(gateway, Number.MAX_SAFE_INTEGER, () => done);
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    batch = (await (await fetch(`${gateway.base}/v1/batches/${created.id}`)).json()) as typeof batch;
    if (batch.status === "completed" || batch.status === "failed" || batch.status === "expired") break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  done = true;
  const seconds = (performance.now() - started) / 1000;
  const duringBatch = await during;
  const cpu = cpuSeconds(gateway.pid) - cpuBefore;
  const sampled = sampler.stop();
  const counts = batch.request_counts ?? { completed: 0, failed: lines };
  // The batch's share of the CPU: what the interactive requests sent meanwhile cost at their own rate is taken out.
  const batchCpu = Math.max(0, cpu - duringBatch.requests * (alone.cpuUsPerRequest / 1e6));
  return {
    lines,
    seconds,
    linesPerSecond: counts.completed / seconds,
    cpuUsPerLine: (batchCpu / lines) * 1e6,
    peakRssMb: exact ? Math.max(memory(gateway.pid).peakMb, sampled) : sampled,
    interactive: alone,
    interactiveDuringBatch: duringBatch,
    errors: (batch.status === "completed" ? 0 : 1) + counts.failed + (lines - counts.completed - counts.failed),
  };
}
