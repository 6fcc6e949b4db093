/**
 * Async jobs end to end through the embedded relay: submit N jobs of a 100 KB file, then
 * poll each until it completed, and check every result is the mock backend's answer.
 * Jobs/s counts from the first submission to the last completion seen.
 */
import { performance } from "node:perf_hooks";
import { PATHS } from "./config.ts";
import { MULTIPART_TYPE, multipartBody } from "./fixtures.ts";
import { MODELS } from "./config.ts";
import type { Target } from "./measure.ts";
import { cpuSeconds, memory, resetPeak, RssSampler } from "./procs.ts";

export interface JobsResult {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /** Gateway CPU per job: submission, the relay's work and the client's status polls. */
  cpuUsPerJob: number;
  peakRssMb: number;
  errors: number;
  invalid: number;
}

const FILE_BYTES = 100 * 1024;

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** A completed job's result is the mock's JSON answer to the relay's upload (which carries the whole file). */
function validResult(view: { result?: unknown }): boolean {
  const result = view.result as { text?: unknown; bytes?: unknown } | undefined;
  return result?.text === "transcribed" && typeof result.bytes === "number" && result.bytes > FILE_BYTES;
}

export async function runJobsEndToEnd(gateway: Target, count: number, concurrency: number): Promise<JobsResult> {
  // fetch wants ArrayBuffer-backed bytes, not a pooled Buffer.
  const body = new Uint8Array(multipartBody(MODELS.upload, FILE_BYTES));
  const exact = resetPeak(gateway.pid);
  const sampler = new RssSampler(gateway.pid);
  sampler.start();
  const cpuBefore = cpuSeconds(gateway.pid);
  const started = performance.now();
  let errors = 0;
  let invalid = 0;
  const ids: string[] = [];
  await pool(Array.from({ length: count }, (_, i) => i), concurrency, async () => {
    try {
      const response = await fetch(gateway.base + PATHS.jobs, { method: "POST", headers: { "content-type": MULTIPART_TYPE }, body });
      const answer = (await response.json()) as { job_id?: string; status?: string };
      if (response.status !== 202 || typeof answer.job_id !== "string" || answer.status !== "pending") errors++;
      else ids.push(answer.job_id);
    } catch {
      errors++;
    }
  });
  // Each job polled like a client waiting for its own result, oldest first (the relay works
  // the queue in order): one GET, then again every 10 ms until it is done.
  let finished = started;
  let pendingLeft = 0;
  const deadline = Date.now() + 120_000;
  await pool(ids, 4, async (id) => {
    while (Date.now() < deadline) {
      try {
        const response = await fetch(`${gateway.base}${PATHS.jobs}/${id}`);
        const view = (await response.json()) as { status?: string; result?: unknown };
        if (response.status !== 200) errors++;
        else if (view.status === "completed") {
          finished = performance.now();
          if (!validResult(view)) invalid++;
        } else if (view.status === "failed" || view.status === "cancelled") errors++;
        else {
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
      } catch {
        errors++;
      }
      return;
    }
    pendingLeft++;
  });
  errors += pendingLeft;
  const cpu = cpuSeconds(gateway.pid) - cpuBefore;
  const sampled = sampler.stop();
  const seconds = (finished - started) / 1000;
  return {
    jobs: count,
    seconds,
    jobsPerSecond: (count - errors) / seconds,
    cpuUsPerJob: (cpu / count) * 1e6,
    peakRssMb: exact ? Math.max(memory(gateway.pid).peakMb, sampled) : sampled,
    errors,
    invalid,
  };
}
